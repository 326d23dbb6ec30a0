// Package wire holds the JSON documents of Llamatray's management API — GET /models (and
// /v1/models), GET /api/status and the /models/events stream — defined once, for the server
// (router/httpapi and router/ollama send them with Write) and for router/client (which decodes
// them). It imports nothing of the router, so a client of the API needs no part of the engine.
package wire

import "time"

// ModelList is the GET /models and GET /v1/models document. Its "data" entries keep the OpenAI
// fields (id, object, created, owned_by) typed as the SDKs expect, plus llama.cpp router-style status.
type ModelList struct {
	Object string  `json:"object"` // "list"
	Data   []Model `json:"data"`
}

// Model is one model of the list, and the GET /v1/models/{model} document.
type Model struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"` // "model"
	OwnedBy string      `json:"owned_by"`
	Created int64       `json:"created"` // the file's modification time, else the start of the instance
	Aliases []string    `json:"aliases"`
	Status  ModelStatus `json:"status"`
	Meta    *ModelMeta  `json:"meta"` // null when the catalog no longer has the model
	// As llama.cpp's router gives them:
	Tags          []string   `json:"tags"`
	Architecture  Modalities `json:"architecture"`
	ContextLength int        `json:"context_length"`     // training context, 0 when unknown
	CtxSize       int        `json:"ctx_size,omitempty"` // the context it runs with: the configured one, else the trained one; absent when unknown
}

// Modalities are what a model takes and gives (llama.cpp's "architecture" of a model entry).
type Modalities struct {
	Input  []string `json:"input_modalities"`  // "text", and "image" with a projector
	Output []string `json:"output_modalities"` // "text"
}

// ModelStatus is the engine's view of one model.
type ModelStatus struct {
	Value               string     `json:"value"` // unloaded, loading, loaded, sleeping, stopping, failed
	ActiveRequests      int        `json:"active_requests"`
	Queued              int        `json:"queued"`
	MemoryBytes         int64      `json:"memory_bytes"`          // held now (measured), 0 when not running
	MemoryEstimateBytes int64      `json:"memory_estimate_bytes"` // what a load needs, for the configured context
	LastUsed            *time.Time `json:"last_used"`
	PID                 int        `json:"pid"`
	Port                int        `json:"port"`   // 0 when the child is on a unix socket
	Socket              string     `json:"socket"` // the child's unix socket, "" on TCP
	ExitCode            *int       `json:"exit_code"`
	Pinned              bool       `json:"pinned"`
	Draining            bool       `json:"draining"`
	Error               string     `json:"error"`
	NextRetry           *time.Time `json:"next_retry"`
	UnloadAt            *time.Time `json:"unload_at"`
	Progress            float64    `json:"progress"`
	Args                []string   `json:"args"`
	Wait                *Wait      `json:"wait"` // why its queued requests wait; null when none is queued
}

// Wait is why a model's queued requests wait, as the scheduler last decided.
type Wait struct {
	Text        string           `json:"text"`     // the sentence every surface shows: "waiting: 2nd in line for 5.1 GiB; beta will be unloaded when its 1 request ends"
	Kind        string           `json:"kind"`     // loading, stopping, draining, memory, busy, behind, worker
	Position    int              `json:"position"` // place in the queue of models, 1 = first in line
	Since       time.Time        `json:"since"`    // when its first waiting request was queued
	NeedBytes   int64            `json:"need_bytes"`
	NeedDevices map[string]int64 `json:"need_devices"`     // of need_bytes, per GPU device by name; {} without a GPU
	FreeBytes   int64            `json:"free_bytes"`       // free for models now
	FreeDevices map[string]int64 `json:"free_devices"`     // free now on each GPU device by name
	Victims     []WaitModel      `json:"victims"`          // unloaded for it: stopping now, or draining until their requests end
	Holders     []WaitModel      `json:"holders"`          // busy, behind: the models holding the memory it needs that cannot be unloaded now
	BusySince   *time.Time       `json:"busy_since"`       // busy: since when it has been blocked
	DrainAt     *time.Time       `json:"drain_at"`         // busy: when fair_wait is up and busy models drain for it
	MaxLoaded   int              `json:"max_loaded"`       // busy: the max_loaded cap is what is full; 0 otherwise
	Behind      string           `json:"behind"`           // behind: the blocked model ahead of it
	Worker      string           `json:"worker,omitempty"` // worker: the worker it waits for, used by holders[0]
}

// WaitModel is another model as a wait reason names it.
type WaitModel struct {
	ID             string `json:"id"`
	State          string `json:"state"`
	ActiveRequests int    `json:"active_requests"`
	Pinned         bool   `json:"pinned"`
}

// ModelMeta is the catalog's view of one model file.
type ModelMeta struct {
	Name          string `json:"name"`
	Architecture  string `json:"architecture"`
	Parameters    int64  `json:"parameters"`
	Quantization  string `json:"quantization"`
	SizeBytes     int64  `json:"size_bytes"`
	ContextLength int    `json:"context_length"`
	ChatTemplate  bool   `json:"chat_template"`
	Path          string `json:"path"`
	Splits        int    `json:"splits"`
	Mmproj        string `json:"mmproj"`
	HubName       string `json:"hub_name"`             // ORG/REPO:QUANT for a model from the Hugging Face Hub cache, else ""
	FileID        string `json:"file_id,omitempty"`    // for a model named by its hub_name: the ID its file name gave it, still an alias
	VariantOf     string `json:"variant_of,omitempty"` // for a variant ("ID@NAME" of [models."ID".variants."NAME"]): the ID of the model whose file it serves
	Variant       string `json:"variant,omitempty"`    // for a variant: its name
	// The draft model configured for speculative decoding (`draft`): its ID once resolved, the
	// bytes of the memory estimate that are the draft's, or why its loads are refused.
	Draft      string `json:"draft,omitempty"`
	DraftBytes int64  `json:"draft_bytes,omitempty"`
	DraftError string `json:"draft_error,omitempty"`
	// EstimateError is why its memory need could not be sized from its header (the need shown is then
	// its file size); "" when it was.
	EstimateError string `json:"estimate_error,omitempty"`
}

// Event is the data line of one /models/events server-sent event.
type Event struct {
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Model   string    `json:"model"`
	Kind    string    `json:"kind"`  // state, lease, catalog, pressure, resync
	State   string    `json:"state"` // as ModelStatus.Value
	Active  int       `json:"active"`
	Message string    `json:"message"`
}

// Status is the GET /api/status document.
type Status struct {
	Service       string `json:"service"` // "llamatray"
	Version       string `json:"version"`
	StartTime     string `json:"start_time"` // RFC 3339
	UptimeSeconds int64  `json:"uptime_seconds"`
	Listen        string `json:"listen"`
	DefaultModel  string `json:"default_model"`
	Memory        Memory `json:"memory"`
	Models        Counts `json:"models"`
	Peers         []Peer `json:"peers"` // other machines' servers (peers.go)
	// Setup is what the service adds (llama-server, config file, model folders); its fields appear
	// at the top level of the document, and not at all when it is nil.
	*Setup
}

// Memory is the memory budget of /api/status.
type Memory struct {
	Limit           int64 `json:"limit"`
	Configured      bool  `json:"configured"` // Limit came from the configuration
	Used            int64 `json:"used"`
	Free            int64 `json:"free"`
	Reserve         int64 `json:"reserve"`
	SystemTotal     int64 `json:"system_total"`
	SystemAvailable int64 `json:"system_available"`
	MaxLoaded       int   `json:"max_loaded"`
	Loaded          int   `json:"loaded"`
}

// Counts are the model counts of /api/status: how many models are in each state, and the
// requests they serve and queue.
type Counts struct {
	Total          int `json:"total"`
	Unloaded       int `json:"unloaded"`
	Loading        int `json:"loading"`
	Loaded         int `json:"loaded"`
	Sleeping       int `json:"sleeping"`
	Stopping       int `json:"stopping"`
	Failed         int `json:"failed"`
	ActiveRequests int `json:"active_requests"`
	Queued         int `json:"queued"`
	Pinned         int `json:"pinned"`
}

// Setup is the service's part of /api/status.
type Setup struct {
	LlamaServer     LlamaServer `json:"llama_server"`
	ConfigPath      string      `json:"config_path"`
	ModelDirs       []string    `json:"model_dirs"`
	CatalogWarnings []string    `json:"catalog_warnings"`
	OllamaListen    string      `json:"ollama_listen,omitempty"` // where Ollama's port is also answered (ollama_port)
	OllamaError     string      `json:"ollama_error,omitempty"`  // why not, when ollama_port is on
	Update          *Update     `json:"update,omitempty"`        // the daily check of Llamatray's releases; absent while update_check is off or before the first check
	// Workers are the [workers.NAME] machines models are spread over (workers.go), by name.
	Workers []WorkerStatus `json:"workers"`
	// Lending is this machine lent to other Llamatrays (lend.go).
	Lending Lending `json:"lending"`
}

// Update is what the check of Llamatray's own releases found (router/update).
type Update struct {
	Current   string    `json:"current"`          // the running version ("dev" for a development build)
	Build     string    `json:"build"`            // what the running version is: release, snapshot or development
	Latest    string    `json:"latest,omitempty"` // the newest release offered (pre-releases only with update_prerelease), "" when none
	URL       string    `json:"url,omitempty"`    // its release page
	Available bool      `json:"available"`        // Latest is newer than Current: "Llamatray <latest> is available"
	Message   string    `json:"message"`          // the result in one line, as `llamatray update --check` prints it
	CheckedAt time.Time `json:"checked_at,omitzero"`
	Error     string    `json:"error,omitempty"` // why the last check failed (the last result, if any, is kept)
}

// LlamaServer says which llama-server binary the instance uses, or why none.
type LlamaServer struct {
	Path    string `json:"path"` // "" when none was found
	Source  string `json:"source"`
	Version string `json:"version"`
	Build   string `json:"build"` // llama.cpp's build in use, "b7100"; Llamatray's own install when Source is "installed"
	Error   string `json:"error"`
	Hint    string `json:"hint"` // how to install one on this OS
}
