package httpapi

import (
	"net/http"

	"github.com/llamatray/llamatray/router/view"
	"github.com/llamatray/llamatray/router/wire"
)

// listModels serves GET /models and GET /v1/models: every model with its state, as the service
// views it (router/view).
// ?reload=1 scans the model folders first, as llama.cpp's router does.
func (srv *Server) listModels(w http.ResponseWriter, r *http.Request) {
	if err := srv.reload(r); err != nil {
		writeError(w, r, err)
		return
	}
	l := view.List(srv.views.Models(), srv.o.StartTime)
	taken := make(map[string]bool, len(l.Data))
	for _, m := range l.Data {
		taken[m.ID] = true
	}
	l.Data = append(l.Data, srv.o.Peers.Listed(taken, srv.o.StartTime.Unix())...)
	wire.Write(w, http.StatusOK, l)
}

// getModel serves GET /v1/models/{model} (OpenAI "retrieve model"), by ID or alias.
func (srv *Server) getModel(w http.ResponseWriter, r *http.Request) {
	name, ok := muxVar(r, "model")
	if !ok {
		writeError(w, r, errNotFound)
		return
	}
	id, err := srv.resolve(name)
	if err != nil {
		if m, ok := srv.peerModel(name); ok && isNotFound(err) {
			wire.Write(w, http.StatusOK, m)
			return
		}
		writeError(w, r, err)
		return
	}
	m, err := srv.views.Model(id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	wire.Write(w, http.StatusOK, m.Wire(srv.o.StartTime))
}

// peerModel is the entry of GET /v1/models/{model} for a peer's model, by its listed ID or its ref.
func (srv *Server) peerModel(name string) (wire.Model, bool) {
	taken := map[string]bool{}
	for _, m := range srv.views.Models() {
		taken[m.ID] = true
	}
	for _, m := range srv.o.Peers.Listed(taken, srv.o.StartTime.Unix()) {
		if m.ID == name || len(m.Aliases) > 0 && m.Aliases[0] == name {
			return m, true
		}
	}
	return wire.Model{}, false
}
