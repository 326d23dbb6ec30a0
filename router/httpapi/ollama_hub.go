package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/ollama"
)

// hubNameOf reads a model name as Ollama's users write Hub models: hf.co/ORG/REPO:QUANT (also
// huggingface.co/…, with or without https://), or plain ORG/REPO:QUANT.
func hubNameOf(name string) string {
	n := strings.TrimSpace(name)
	for _, p := range []string{"https://", "http://"} {
		n = strings.TrimPrefix(n, p)
	}
	for _, p := range []string{"hf.co/", "huggingface.co/", "www.huggingface.co/"} {
		if rest, ok := strings.CutPrefix(strings.ToLower(n), p); ok {
			n = n[len(n)-len(rest):]
			break
		}
	}
	if base, ok := strings.CutSuffix(n, ":latest"); ok {
		n = base // Ollama's default tag: the default quant
	}
	return n
}

// ollamaPull serves POST /api/pull: a download from the Hugging Face Hub, with Ollama's status
// lines as it goes (stream) or one status at its end. The download belongs to the service: a
// client that goes away does not stop it.
func (srv *Server) ollamaPull(w http.ResponseWriter, r *http.Request) {
	var req ollama.NameRequest
	if !srv.ollamaRead(w, r, &req) {
		return
	}
	if srv.o.Hub == nil || srv.o.Hub.Manager == nil {
		writeJSON(w, http.StatusNotImplemented, ollama.ErrorResponse{Error: "downloads from the Hugging Face Hub are off in this Llamatray"})
		return
	}
	if err := outbound(r); err != nil {
		srv.ollamaError(w, r, req.Named(), err)
		return
	}
	ref, err := hub.ParseRef(hubNameOf(req.Named()))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, ollama.ErrorResponse{Error: "pull model manifest: Llamatray pulls GGUF models from the Hugging Face Hub; name one as hf.co/ORG/REPO:QUANT (" + err.Error() + ")"})
		return
	}
	stream := req.Stream == nil || *req.Stream
	p := &pullLines{w: w, stream: stream}
	if ref.Quant != "" && srv.o.Catalog != nil {
		if m, ok := srv.o.Catalog.Lookup(ref.String()); ok && m.HubName != "" {
			p.status("pulling manifest")
			p.done(ollama.ProgressResponse{Status: "success"})
			return
		}
	}
	mgr := srv.o.Hub.Manager
	events, stop := mgr.Subscribe()
	defer stop()
	st, err := mgr.Start(r.Context(), ref)
	if err != nil {
		srv.ollamaError(w, r, req.Named(), err)
		return
	}
	p.status("pulling manifest")
	poll := time.NewTicker(time.Second) // a dropped event cannot leave the answer hanging
	defer poll.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev := <-events:
			if strings.EqualFold(ev.Model, st.Model) && p.event(ev.PullStatus) {
				return
			}
		case <-poll.C:
			if cur, ok := mgr.Status(st.Model); ok && cur.State != hub.StateDownloading && p.event(cur) {
				return
			}
		}
	}
}

// pullLines writes /api/pull's answer: NDJSON status lines, or one object when it is not a stream.
type pullLines struct {
	w       http.ResponseWriter
	stream  bool
	started bool
}

func (p *pullLines) line(v any) {
	if !p.started {
		p.started = true
		p.w.Header().Set("Content-Type", "application/x-ndjson")
		p.w.WriteHeader(http.StatusOK)
	}
	b, _ := json.Marshal(v)
	_, _ = p.w.Write(append(b, '\n'))
	if f, ok := p.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (p *pullLines) status(s string) {
	if p.stream {
		p.line(ollama.ProgressResponse{Status: s})
	}
}

// done writes the last line: success, or the error.
func (p *pullLines) done(v any) {
	if p.stream || p.started {
		p.line(v)
		return
	}
	status := http.StatusOK
	if _, failed := v.(ollama.ErrorResponse); failed {
		status = http.StatusInternalServerError
	}
	writeJSON(p.w, status, v)
}

// event writes what a pull's state says; true once it ended.
func (p *pullLines) event(st hub.PullStatus) bool {
	switch st.State {
	case hub.StateDownloading:
		if p.stream {
			for _, f := range st.Progress.Files {
				p.line(ollama.ProgressResponse{Status: "pulling " + f.Path, Digest: f.Path, Total: f.Total, Completed: f.Done})
			}
		}
		return false
	case hub.StateDownloaded:
		p.status("verifying sha256 digest")
		p.status("writing manifest")
		p.done(ollama.ProgressResponse{Status: "success"})
	default:
		msg := st.Error
		if msg == "" {
			msg = "the download " + st.State
		}
		p.done(ollama.ErrorResponse{Error: msg})
	}
	return true
}
