package wire

import "time"

// Pull is one download from the Hugging Face Hub: an entry of GET /api/hub/pulls, the "download"
// of a POST /models answer, and the body of a /models/events "download" line.
type Pull struct {
	Model      string         `json:"model"`  // ORG/REPO:QUANT
	Status     string         `json:"status"` // downloading, downloaded, failed, cancelled
	BytesDone  int64          `json:"bytes_done"`
	BytesTotal int64          `json:"bytes_total"`
	Rate       float64        `json:"bytes_per_second"`
	ETASeconds float64        `json:"eta_seconds"`
	File       string         `json:"file,omitempty"` // the file being downloaded
	Files      []FileProgress `json:"files"`
	Error      string         `json:"error,omitempty"`
	Started    time.Time      `json:"started"`
}

// FileProgress is one file of a pull.
type FileProgress struct {
	Path  string `json:"path"`
	Done  int64  `json:"done"`
	Total int64  `json:"total"`
}

// PullAnswer is the answer of POST /models {"model": "ORG/REPO[:QUANT]"}.
type PullAnswer struct {
	Success  bool   `json:"success"`
	Model    string `json:"model"`        // ORG/REPO:QUANT
	ID       string `json:"id,omitempty"` // the catalog ID, when already on disk
	Status   string `json:"status"`       // downloading, or downloaded when on disk
	Download *Pull  `json:"download,omitempty"`
}

// RemoveAnswer is the answer of DELETE /models {"model"}.
type RemoveAnswer struct {
	Success bool     `json:"success"`
	ID      string   `json:"id,omitempty"` // the model removed
	Model   string   `json:"model"`
	Status  string   `json:"status,omitempty"` // "cancelled" when a running pull was stopped
	Removed []string `json:"removed"`          // the files deleted
}

// DownloadEvent is a /models/events line about a pull: kind "download", state (and the pull's
// status) downloading, then downloaded, failed or cancelled.
type DownloadEvent struct {
	Time    time.Time `json:"time"`
	Model   string    `json:"model"`
	Kind    string    `json:"kind"` // "download"
	State   string    `json:"state"`
	Message string    `json:"message"`
	Pull              // its "model" is the event's
}
