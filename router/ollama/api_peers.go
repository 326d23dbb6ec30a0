package ollama

// Peers' models in Ollama's lists: /api/tags and /api/ps list them beside the local ones, under
// the names the OpenAI listing gives them (peer.Set.Listed), and /api/show answers what is known of
// one.

import (
	"net/http"
	"strings"

	"github.com/llamatray/llamatray/router/peer"
	"github.com/llamatray/llamatray/router/wire"
)

// peerList are the answering peers' models for /api/tags and /api/ps: a bare ID is listed
// with ":latest" as a local one is (peerRef takes it back off); a "peer:NAME/ID" (a local model
// has the ID) is listed as it is, since that form sends its ID to the peer verbatim. A peer that is
// down is left out (Ollama lists what can be used), and so is every peer for a request that came
// from a peer (one hop only). A model the peer reports loaded is Running. A bare ID whose listed
// name a local model takes (as resolveName takes it: an alias, an Ollama name), or that is
// listed already, is listed as its "peer:NAME/ID" too, so a listed name is never another model's.
func (api *API) peerList(r *http.Request, local []Model) []Model {
	if api.Peers == nil || r.Header.Get(peer.ViaHeader) != "" {
		return nil
	}
	views := api.Views.Models()
	taken := make(map[string]bool, len(views))
	for _, v := range views {
		taken[v.ID] = true
	}
	names := make(map[string]bool, len(local))
	for _, m := range local {
		names[m.Name] = true
	}
	var out []Model
	for _, e := range api.Peers.Listed(taken, api.Started.Unix()) {
		if e.Status.Value == peer.Unavailable {
			continue
		}
		ref, name := e.ID, e.ID
		if len(e.Aliases) > 0 {
			ref, name = e.Aliases[0], ListedName(e.ID)
		}
		if names[name] || api.isLocal(name) {
			name = ref
		}
		names[name] = true
		out = append(out, PeerModel(name, ref, e.Status.Value, api.Started))
	}
	return out
}

// isLocal says a local model takes an Ollama request for name: resolveName's lookup, without
// a pull.
func (api *API) isLocal(name string) bool {
	for _, n := range append([]string{name}, AltNames(name)...) {
		if _, err := api.Host.Resolve(nil, n); err == nil || !notFound(err) {
			return true
		}
	}
	return false
}

// peerShow answers POST /api/show for ref ("peer:NAME/ID", as resolveName gives a peer's
// model) with what is known of it; false when no peer of that name lists the ID.
func (api *API) peerShow(w http.ResponseWriter, ref string) bool {
	pname, id, ok := peer.ParseRef(ref)
	if !ok || api.Peers == nil {
		return false
	}
	p, ok := api.Peers.Peer(pname)
	if !ok {
		return false
	}
	for _, m := range p.Models {
		if m.ID != id {
			continue
		}
		s := Show(PeerModel(ref, ref, p.ModelStatus(m), api.Started))
		s.Modelfile = "# Served by the peer " + pname + "; Llamatray knows only its name and state.\nFROM " + id + "\n"
		s.ModelInfo = map[string]any{} // the peer said nothing of its architecture
		wire.Write(w, http.StatusOK, s)
		return true
	}
	return false
}

// peerRef is the "peer:NAME/ID" an Ollama request's name goes to: with explicit, only a name of
// that form; else a name (or the name without the ":latest" Ollama lists it with) a peer lists.
// The request then goes through Host.Proxy, which sends the translated request to the peer's
// OpenAI endpoint and the answer back translated: any OpenAI-compatible peer serves it.
func (api *API) peerRef(r *http.Request, name string, explicit bool) (string, bool) {
	if api.Peers == nil || r.Header.Get(peer.ViaHeader) != "" {
		return "", false // one hop only: the name is looked up here, and not found
	}
	if explicit {
		_, id, ok := peer.ParseRef(name)
		return name, ok && !strings.HasPrefix(id, peer.RefPrefix)
	}
	for _, n := range append([]string{name}, AltNames(name)...) {
		if p, ok := api.Peers.Find(n); ok {
			return peer.Ref(p.Name, n), true
		}
	}
	return "", false
}
