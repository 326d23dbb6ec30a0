package wire

// ManageRequest is the body of POST /models/load, /models/unload and /models/pin (the model may
// also come as ?model=).
type ManageRequest struct {
	Model  string `json:"model"`
	Force  bool   `json:"force,omitempty"`  // unload: stop at once, cutting in-flight requests
	Pinned *bool  `json:"pinned,omitempty"` // pin: true when absent
}

// ManageAnswer is the answer of POST /models/load and /models/unload.
type ManageAnswer struct {
	Success bool         `json:"success"`
	ID      string       `json:"id"`
	Status  *ModelStatus `json:"status"` // null when the engine cannot say
}

// PinAnswer is the answer of POST /models/pin.
type PinAnswer struct {
	Success bool   `json:"success"`
	ID      string `json:"id"`
	Pinned  bool   `json:"pinned"`
}

// Logs is the GET /models/logs document: the tail of the model's llama-server output.
type Logs struct {
	ID    string   `json:"id"`
	Lines []string `json:"lines"`
}

// Health is the GET /health document. Service tells a Llamatray instance from a bare llama-server,
// which answers /health too.
type Health struct {
	Status  string `json:"status"` // "ok"
	Service string `json:"service"`
	Version string `json:"version"`
}
