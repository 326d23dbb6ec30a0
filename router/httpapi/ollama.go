package httpapi

import (
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/llamatray/llamatray/router/ollama"
)

// ollamaRoutes mounts Ollama's API (router/ollama), served through the Server.
func (srv *Server) ollamaRoutes(m *mux.Router) {
	host := ollama.Host{
		ReadBody: srv.readBody,
		Failure: func(r *http.Request, err error) (int, string, time.Duration, bool) {
			e, ok := failed(r, err)
			return e.Status, e.Message, e.RetryAfter, ok
		},
		Resolve: func(r *http.Request, name string) (string, error) {
			if r == nil {
				return srv.resolve(name)
			}
			return srv.resolveRequest(r, name)
		},
		Proxy: func(w http.ResponseWriter, r *http.Request, id string, body []byte, stream bool, path string) {
			srv.serveModel(w, r, id, body, stream, path, "")
		},
		Waited: func(r *http.Request) time.Duration {
			if info := infoFrom(r.Context()); info != nil {
				return info.waited
			}
			return 0
		},
		CheckAutoload: srv.checkAutoload,
		Outbound:      outbound,
		RemovePulled: func(r *http.Request, id string) error {
			_, err := srv.removePulled(r, id)
			return err
		},
		UnderRules: srv.underRules,
	}
	api := &ollama.API{Host: host, Engine: srv.o.Engine, Views: srv.views, Peers: srv.o.Peers,
		Alias: srv.o.Alias, Log: srv.log, Started: srv.o.StartTime}
	if srv.o.Catalog != nil {
		api.Catalog = srv.o.Catalog
	}
	if srv.o.Hub != nil {
		api.Hub = srv.o.Hub.Manager
	}
	api.Mount(m)
}
