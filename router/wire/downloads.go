package wire

import "time"

// Download is one download of GET /api/downloads: a model pulled from the Hub or a llama-server
// build of llama.cpp, running, paused, failed or partial on disk from an earlier run.
type Download struct {
	Kind           string    `json:"kind"`   // "model" or "llama-server"
	Name           string    `json:"name"`   // ORG/REPO:QUANT, or the build (b7100)
	Status         string    `json:"status"` // downloading, paused, failed, cancelled, downloaded; a build also verifying, unpacking, installed
	BytesDone      int64     `json:"bytes_done"`
	BytesTotal     int64     `json:"bytes_total"`
	BytesPerSecond float64   `json:"bytes_per_second"` // over the last seconds
	ETASeconds     float64   `json:"eta_seconds"`      // 0 when unknown
	Error          string    `json:"error,omitempty"`
	Started        time.Time `json:"started"`
	// Actions are what POST /api/downloads/ACTION {"name"} does for it now: pause, resume, cancel.
	Actions []string `json:"actions"`
}

// DownloadList is the GET /api/downloads document: running ones first, then the newest.
type DownloadList struct {
	Object string     `json:"object"` // "list"
	Data   []Download `json:"data"`
}
