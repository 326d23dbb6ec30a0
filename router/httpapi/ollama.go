package httpapi

import (
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/llamatray/llamatray/router/ollama"
)

// ollamaRoutes mounts Ollama's API (router/ollama), served through the Server as ollamaHost.
func (srv *Server) ollamaRoutes(m *mux.Router) {
	api := &ollama.API{Host: ollamaHost{srv}, Engine: srv.o.Engine, Views: srv.views, Peers: srv.o.Peers,
		Alias: srv.o.Alias, Log: srv.log, Started: srv.o.StartTime}
	if srv.o.Catalog != nil {
		api.Catalog = srv.o.Catalog
	}
	if srv.o.Hub != nil {
		api.Hub = srv.o.Hub.Manager
	}
	api.Mount(m)
}

// ollamaHost is the Server as the Ollama API sees it (ollama.Host).
type ollamaHost struct{ srv *Server }

func (h ollamaHost) ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return h.srv.readBody(w, r)
}

func (h ollamaHost) Failure(r *http.Request, err error) (int, string, time.Duration, bool) {
	e, ok := failed(r, err)
	return e.Status, e.Message, e.RetryAfter, ok
}

func (h ollamaHost) Resolve(r *http.Request, name string) (string, error) {
	if r == nil {
		return h.srv.resolve(name)
	}
	return h.srv.resolveRequest(r, name)
}

func (h ollamaHost) Proxy(w http.ResponseWriter, r *http.Request, id string, body []byte, stream bool, path string) {
	h.srv.serveModel(w, r, id, body, stream, path, "")
}

func (h ollamaHost) Waited(r *http.Request) time.Duration {
	if info := infoFrom(r.Context()); info != nil {
		return info.waited
	}
	return 0
}

func (h ollamaHost) CheckAutoload(r *http.Request, id string) error {
	return h.srv.checkAutoload(r, id)
}

func (h ollamaHost) Outbound(r *http.Request) error { return outbound(r) }

func (h ollamaHost) RemovePulled(r *http.Request, id string) error {
	_, err := h.srv.removePulled(r, id)
	return err
}

func (h ollamaHost) UnderRules(id string, defaults map[string]any) map[string]any {
	return h.srv.underRules(id, defaults)
}
