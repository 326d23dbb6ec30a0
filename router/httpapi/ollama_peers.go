package httpapi

// Peers' models in Ollama's lists: /api/tags and /api/ps list them beside the local ones, under
// the names the OpenAI listing gives them (peerModels), and /api/show answers what is known of one.

import (
	"net/http"

	"github.com/llamatray/llamatray/router/ollama"
	"github.com/llamatray/llamatray/router/peer"
)

// ollamaPeerModels are the answering peers' models for /api/tags and /api/ps: a bare ID is listed
// with ":latest" as a local one is (ollamaPeer takes it back off); a "peer:NAME/ID" (a local model
// has the ID) is listed as it is, since that form sends its ID to the peer verbatim. A peer that is
// down is left out (Ollama lists what can be used), and so is every peer for a request that came
// from a peer (one hop only). A model the peer reports loaded is Running. A bare ID whose listed
// name a local model takes (as ollamaResolve takes it: an alias, an Ollama name), or that is
// listed already, is listed as its "peer:NAME/ID" too, so a listed name is never another model's.
func (srv *Server) ollamaPeerModels(r *http.Request, local []ollama.Model) []ollama.Model {
	if srv.o.Peers == nil || r.Header.Get(peer.ViaHeader) != "" {
		return nil
	}
	views := srv.views.Models()
	taken := make(map[string]bool, len(views))
	for _, v := range views {
		taken[v.ID] = true
	}
	names := make(map[string]bool, len(local))
	for _, m := range local {
		names[m.Name] = true
	}
	var out []ollama.Model
	for _, e := range srv.peerModels(taken) { // peers.go
		if e.Status.Value == peer.Unavailable {
			continue
		}
		ref, name := e.ID, e.ID
		if len(e.Aliases) > 0 {
			ref, name = e.Aliases[0], ollama.ListedName(e.ID)
		}
		if names[name] || srv.ollamaLocal(name) {
			name = ref
		}
		names[name] = true
		out = append(out, ollama.PeerModel(name, ref, e.Status.Value, srv.o.StartTime))
	}
	return out
}

// ollamaLocal says a local model takes an Ollama request for name: ollamaResolve's lookup, without
// a pull.
func (srv *Server) ollamaLocal(name string) bool {
	for _, n := range append([]string{name}, ollama.AltNames(name)...) {
		if _, err := srv.resolve(n); err == nil || !isNotFound(err) {
			return true
		}
	}
	return false
}

// ollamaPeerShow answers POST /api/show for ref ("peer:NAME/ID", as ollamaResolve gives a peer's
// model) with what is known of it; false when no peer of that name lists the ID.
func (srv *Server) ollamaPeerShow(w http.ResponseWriter, ref string) bool {
	pname, id, ok := peer.ParseRef(ref)
	if !ok || srv.o.Peers == nil {
		return false
	}
	p, ok := srv.o.Peers.Peer(pname)
	if !ok {
		return false
	}
	for _, m := range p.Models {
		if m.ID != id {
			continue
		}
		s := ollama.Show(ollama.PeerModel(ref, ref, p.ModelStatus(m), srv.o.StartTime))
		s.Modelfile = "# Served by the peer " + pname + "; Llamatray knows only its name and state.\nFROM " + id + "\n"
		s.ModelInfo = map[string]any{} // the peer said nothing of its architecture
		writeJSON(w, http.StatusOK, s)
		return true
	}
	return false
}
