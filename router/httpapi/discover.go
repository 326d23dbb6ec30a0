package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/llamatray/llamatray/router/wire"
)

// discoverRoutes declares GET /api/peers/discovered: the other Llamatrays mDNS found on the local
// network that are not peers yet. Only offered: adding one is POST /api/peers.
func (srv *Server) discoverRoutes(m *mux.Router) {
	m.HandleFunc("/api/peers/discovered", srv.listDiscovered).Methods(http.MethodGet)
}

func (srv *Server) listDiscovered(w http.ResponseWriter, r *http.Request) {
	if srv.o.Discovered == nil {
		writeError(w, r, errNotFound)
		return
	}
	l := srv.o.Discovered()
	if l.Discovered == nil {
		l.Discovered = []wire.Discovered{}
	}
	wire.Write(w, http.StatusOK, l)
}
