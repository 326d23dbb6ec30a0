package wire

import "time"

// PullFile is one file of a download from the Hugging Face Hub.
type PullFile struct {
	Path  string `json:"path"`  // the file's path in the repo
	Done  int64  `json:"done"`  // bytes on disk
	Total int64  `json:"total"` // the file's size
}

// Pull is one download from the Hugging Face Hub: an entry of GET /api/hub/pulls, the
// "download" of a POST /models answer, and the body of a /models/events "download" line.
type Pull struct {
	Model          string     `json:"model"`  // ORG/REPO:QUANT
	Status         string     `json:"status"` // downloading, downloaded, failed, cancelled
	BytesDone      int64      `json:"bytes_done"`
	BytesTotal     int64      `json:"bytes_total"`
	BytesPerSecond float64    `json:"bytes_per_second"` // over the last seconds
	ETASeconds     float64    `json:"eta_seconds"`      // 0 when unknown
	File           string     `json:"file,omitempty"`   // the file being downloaded
	Files          []PullFile `json:"files"`
	Error          string     `json:"error,omitempty"`
	Started        time.Time  `json:"started"`
}

// PullList is the GET /api/hub/pulls document, newest first.
type PullList struct {
	Object string `json:"object"` // "list"
	Data   []Pull `json:"data"`
}

// DownloadEvent is the data line of a /models/events event about a download: kind "download",
// state and status alike (downloading, then downloaded, failed or cancelled).
type DownloadEvent struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"` // "download"
	State   string    `json:"state"`
	Message string    `json:"message"` // why it failed
	Pull
}

// PullAnswer is the answer of POST /models: 202 with the download started, or 200 when the
// model is on disk already.
type PullAnswer struct {
	Success  bool   `json:"success"`
	Model    string `json:"model"`        // ORG/REPO:QUANT
	ID       string `json:"id,omitempty"` // the catalog ID, when on disk already
	Status   string `json:"status"`       // downloading, or downloaded
	Download *Pull  `json:"download,omitempty"`
}

// RemoveAnswer is the answer of DELETE /models.
type RemoveAnswer struct {
	Success bool     `json:"success"`
	ID      string   `json:"id,omitempty"`
	Model   string   `json:"model"`
	Status  string   `json:"status,omitempty"` // "cancelled" when a running download was stopped
	Removed []string `json:"removed"`          // paths deleted
}
