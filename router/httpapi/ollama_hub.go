package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/ollama"
)

// pull serves POST /api/pull: a download from the Hugging Face Hub, with Ollama's status
// lines as it goes (stream) or one status at its end. The download belongs to the service: a
// client that goes away does not stop it.
func (api ollamaAPI) pull(w http.ResponseWriter, r *http.Request) {
	var req ollama.NameRequest
	if !api.read(w, r, &req) {
		return
	}
	if api.o.Hub == nil || api.o.Hub.Manager == nil {
		writeJSON(w, http.StatusNotImplemented, ollama.ErrorResponse{Error: "downloads from the Hugging Face Hub are off in this Llamatray"})
		return
	}
	if err := outbound(r); err != nil {
		api.fail(w, r, req.Named(), err)
		return
	}
	ref, err := hub.ParseRef(ollama.HubName(req.Named()))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, ollama.ErrorResponse{Error: "pull model manifest: Llamatray pulls GGUF models from the Hugging Face Hub; name one as hf.co/ORG/REPO:QUANT (" + err.Error() + ")"})
		return
	}
	stream := req.Stream == nil || *req.Stream
	p := &ollama.PullWriter{W: w, Stream: stream}
	if ref.Quant != "" && api.o.Catalog != nil {
		if m, ok := api.o.Catalog.Lookup(ref.String()); ok && m.HubName != "" {
			p.Status("pulling manifest")
			p.Done(ollama.ProgressResponse{Status: "success"})
			return
		}
	}
	mgr := api.o.Hub.Manager
	events, stop := mgr.Subscribe()
	defer stop()
	st, err := mgr.Start(r.Context(), ref)
	if err != nil {
		api.fail(w, r, req.Named(), err)
		return
	}
	p.Status("pulling manifest")
	poll := time.NewTicker(time.Second) // a dropped event cannot leave the answer hanging
	defer poll.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case ev := <-events:
			if strings.EqualFold(ev.Model, st.Model) && p.Event(ev.PullStatus) {
				return
			}
		case <-poll.C:
			if cur, ok := mgr.Status(st.Model); ok && cur.State != hub.StateDownloading && p.Event(cur) {
				return
			}
		}
	}
}
