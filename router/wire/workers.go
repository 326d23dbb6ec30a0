package wire

// Worker states of WorkerStatus.State.
const (
	WorkerUp      = "up"      // its link is open and the last check passed
	WorkerDown    = "down"    // nothing answers, its rpc-server is not running, or the link was lost
	WorkerRefused = "refused" // it refused the token, or is not a Llamatray worker
	WorkerBusy    = "busy"    // it serves another head's model
)

// WorkerStatus is one [workers.NAME] of the head, as GET /api/status lists it under "workers".
type WorkerStatus struct {
	Name      string         `json:"name"`
	Address   string         `json:"address"`
	State     string         `json:"state"` // WorkerUp, WorkerDown, WorkerRefused, WorkerBusy
	LastError string         `json:"last_error,omitempty"`
	End       string         `json:"end,omitempty"`   // the local end of its link (127.0.0.1:port), what a child's --rpc gets
	Model     string         `json:"model,omitempty"` // the model whose child uses it now
	Devices   []WorkerDevice `json:"devices"`         // its RPC devices, from llama-server --rpc END --list-devices
}

// WorkerDevice is one RPC device of a worker.
type WorkerDevice struct {
	Name        string `json:"name"`        // as llama-server lists it (RPC0)
	Description string `json:"description"` // llama-server's description (the end it reached)
	Total       int64  `json:"total"`       // bytes
	Free        int64  `json:"free"`        // bytes, when listed
}
