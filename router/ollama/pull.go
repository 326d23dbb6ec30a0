package ollama

import (
	"encoding/json"
	"net/http"

	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/wire"
)

// PullWriter writes /api/pull's answer: NDJSON status lines, or one object when it is not a Stream.
type PullWriter struct {
	W       http.ResponseWriter
	Stream  bool
	started bool
}

func (p *PullWriter) line(v any) {
	if !p.started {
		p.started = true
		p.W.Header().Set("Content-Type", "application/x-ndjson")
		p.W.WriteHeader(http.StatusOK)
	}
	b, _ := json.Marshal(v)
	_, _ = p.W.Write(append(b, '\n'))
	if f, ok := p.W.(http.Flusher); ok {
		f.Flush()
	}
}

// Status writes a progress line, in a stream only.
func (p *PullWriter) Status(s string) {
	if p.Stream {
		p.line(ProgressResponse{Status: s})
	}
}

// Done writes the last line: success, or the error.
func (p *PullWriter) Done(v any) {
	if p.Stream || p.started {
		p.line(v)
		return
	}
	status := http.StatusOK
	if _, failed := v.(ErrorResponse); failed {
		status = http.StatusInternalServerError
	}
	wire.Write(p.W, status, v)
}

// Event writes what a pull's state says; true once it ended.
func (p *PullWriter) Event(st hub.PullStatus) bool {
	switch st.State {
	case hub.StateDownloading:
		if p.Stream {
			for _, f := range st.Progress.Files {
				p.line(ProgressResponse{Status: "pulling " + f.Path, Digest: f.Path, Total: f.Total, Completed: f.Done})
			}
		}
		return false
	case hub.StateDownloaded:
		p.Status("verifying sha256 digest")
		p.Status("writing manifest")
		p.Done(ProgressResponse{Status: "success"})
	default:
		msg := st.Error
		if msg == "" {
			msg = "the download " + st.State
		}
		p.Done(ErrorResponse{Error: msg})
	}
	return true
}
