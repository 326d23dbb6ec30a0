package httpapi

import (
	"net/http"
	"strings"

	"github.com/llamatray/llamatray/router/ollama"
	"github.com/llamatray/llamatray/router/peer"
)

// defaults are what a model's Ollama manifest chose (its params and system layers), for the
// requests that leave them out: the manifest of the name the request used (one blob may have
// several, each its own), else the model's first; nil for a model that is not in an Ollama store.
func (api ollamaAPI) defaults(id, asked string) (map[string]any, string) {
	if api.o.Catalog == nil {
		return nil, ""
	}
	c, ok := api.o.Catalog.Lookup(id)
	if !ok || len(c.Ollama) == 0 {
		return nil, ""
	}
	if n, ok := c.OllamaNamed(asked); ok {
		return api.underRules(id, n.Defaults), n.System
	}
	return api.underRules(id, c.Defaults), c.Ollama[0].System
}

func (api ollamaAPI) models() []ollama.Model {
	views := api.views.Models()
	out := make([]ollama.Model, 0, len(views))
	for _, v := range views {
		m := ollama.FromView(v)
		out = append(out, m)
		if v.Meta == nil {
			continue
		}
		names := make([]string, 0, len(v.Meta.Ollama)+len(v.Meta.Aliases))
		for _, n := range v.Meta.Ollama { // the other names of an Ollama store's blob (ollama cp)
			names = append(names, n.Name)
		}
		for _, a := range v.Meta.Aliases { // aliases: names given with /api/copy or in the settings
			if a != v.Meta.FileID { // not the file name a Hub pull had before it was named as pulled
				names = append(names, ollama.ListedName(a))
			}
		}
		for _, n := range names {
			if n != m.Name {
				other := m
				other.Name = n
				out = append(out, other)
			}
		}
	}
	return out
}

// tags serves GET /api/tags: every model Llamatray serves, answering peers' included.
func (api ollamaAPI) tags(w http.ResponseWriter, r *http.Request) {
	local := api.models()
	writeJSON(w, http.StatusOK, ollama.Tags(append(local, api.peerList(r, local)...))) // ollama_peers.go
}

// ps serves GET /api/ps: the models running now, peers' models their peer reports loaded included.
func (api ollamaAPI) ps(w http.ResponseWriter, r *http.Request) {
	local := api.models()
	writeJSON(w, http.StatusOK, ollama.PS(append(local, api.peerList(r, local)...)))
}

// show serves POST /api/show.
func (api ollamaAPI) show(w http.ResponseWriter, r *http.Request) {
	var req ollama.ShowRequest
	if !api.read(w, r, &req) {
		return
	}
	name := req.Model
	if name == "" {
		name = req.Name
	}
	id, ok := api.resolveName(w, r, name)
	if !ok {
		return
	}
	if _, _, isRef := peer.ParseRef(id); isRef && api.peerShow(w, id) { // ollama_peers.go
		return
	}
	v, err := api.views.Model(id)
	if err != nil {
		api.fail(w, r, name, err)
		return
	}
	writeJSON(w, http.StatusOK, ollama.Show(ollama.FromView(v)))
}

// deleteModel serves DELETE /api/delete: a model pulled from the Hub is removed as DELETE /models
// removes it; a file of the user's own, or one in Ollama's store, is not deleted.
func (api ollamaAPI) deleteModel(w http.ResponseWriter, r *http.Request) {
	var req ollama.NameRequest
	if !api.read(w, r, &req) {
		return
	}
	id, ok := api.resolveName(w, r, req.Named())
	if !ok {
		return
	}
	if alias := api.configuredAlias(id, req.Named()); alias != "" && api.o.Alias != nil {
		// a copy (/api/copy): the name goes, the model and its other names stay
		if err := api.o.Alias(id, alias, false); err != nil {
			api.fail(w, r, req.Named(), err)
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	if _, err := api.removePulled(r, id); err != nil {
		api.fail(w, r, req.Named(), err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// configuredAlias is the alias of model id that name (as an Ollama client sends it) is, "" when
// it is not one.
func (api ollamaAPI) configuredAlias(id, name string) string {
	if api.o.Catalog == nil {
		return ""
	}
	c, ok := api.o.Catalog.Lookup(id)
	if !ok {
		return ""
	}
	base, _ := ollama.Unlisted(name)
	for _, a := range c.Aliases {
		if strings.EqualFold(a, name) || strings.EqualFold(a, base) {
			return a
		}
	}
	return ""
}
