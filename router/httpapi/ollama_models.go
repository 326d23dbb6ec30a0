package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/ollama"
	"github.com/llamatray/llamatray/router/peer"
	"github.com/llamatray/llamatray/router/wire"
)

// ollamaDefaults are what a model's Ollama manifest chose (its params and system layers), for the
// requests that leave them out: the manifest of the name the request used (one blob may have
// several, each its own), else the model's first; nil for a model that is not in an Ollama store.
func (srv *Server) ollamaDefaults(id, asked string) (map[string]any, string) {
	if srv.o.Catalog == nil {
		return nil, ""
	}
	c, ok := srv.o.Catalog.Lookup(id)
	if !ok || len(c.Ollama) == 0 {
		return nil, ""
	}
	if n, ok := c.OllamaNamed(asked); ok {
		return srv.underRules(id, n.Defaults), n.System
	}
	return srv.underRules(id, c.Defaults), c.Ollama[0].System
}

func (srv *Server) ollamaModels() []ollama.Model {
	views := srv.views.Models()
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

// ollamaTags serves GET /api/tags: every model Llamatray serves, answering peers' included.
func (srv *Server) ollamaTags(w http.ResponseWriter, r *http.Request) {
	local := srv.ollamaModels()
	writeJSON(w, http.StatusOK, ollama.Tags(append(local, srv.ollamaPeerModels(r, local)...))) // ollama_peers.go
}

// ollamaPS serves GET /api/ps: the models running now, peers' models their peer reports loaded included.
func (srv *Server) ollamaPS(w http.ResponseWriter, r *http.Request) {
	local := srv.ollamaModels()
	writeJSON(w, http.StatusOK, ollama.PS(append(local, srv.ollamaPeerModels(r, local)...)))
}

// ollamaShow serves POST /api/show.
func (srv *Server) ollamaShow(w http.ResponseWriter, r *http.Request) {
	var req ollama.ShowRequest
	if !srv.ollamaRead(w, r, &req) {
		return
	}
	name := req.Model
	if name == "" {
		name = req.Name
	}
	id, ok := srv.ollamaResolve(w, r, name)
	if !ok {
		return
	}
	if _, _, isRef := peer.ParseRef(id); isRef && srv.ollamaPeerShow(w, id) { // ollama_peers.go
		return
	}
	v, err := srv.views.Model(id)
	if err != nil {
		srv.ollamaError(w, r, name, err)
		return
	}
	writeJSON(w, http.StatusOK, ollama.Show(ollama.FromView(v)))
}

// ollamaDelete serves DELETE /api/delete: a model pulled from the Hub is removed as DELETE /models
// removes it; a file of the user's own, or one in Ollama's store, is not deleted.
func (srv *Server) ollamaDelete(w http.ResponseWriter, r *http.Request) {
	var req ollama.NameRequest
	if !srv.ollamaRead(w, r, &req) {
		return
	}
	id, ok := srv.ollamaResolve(w, r, req.Named())
	if !ok {
		return
	}
	if alias := srv.configuredAlias(id, req.Named()); alias != "" && srv.o.Alias != nil {
		// a copy (/api/copy): the name goes, the model and its other names stay
		if err := srv.o.Alias(id, alias, false); err != nil {
			srv.ollamaError(w, r, req.Named(), err)
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	if _, err := srv.removePulled(r, id); err != nil {
		srv.ollamaError(w, r, req.Named(), err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// configuredAlias is the alias of model id that name (as an Ollama client sends it) is, "" when
// it is not one.
func (srv *Server) configuredAlias(id, name string) string {
	if srv.o.Catalog == nil {
		return ""
	}
	c, ok := srv.o.Catalog.Lookup(id)
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

// removePulled unloads model id (its in-flight requests finish first) and deletes its files from
// the Hub cache, blobs nothing else uses included. A model that is not a Hub pull is refused.
func (srv *Server) removePulled(r *http.Request, id string) (wire.RemoveAnswer, error) {
	if srv.o.Hub == nil || srv.o.Hub.Manager == nil {
		return wire.RemoveAnswer{}, &notHubModelError{id: id}
	}
	cm, _ := srv.o.Catalog.Lookup(id)
	cache, repoFiles, ok := hub.LocalFiles(cm)
	if !ok {
		return wire.RemoveAnswer{}, &notHubModelError{id: id, path: cm.Path}
	}
	if err := srv.o.Engine.Unload(r.Context(), id, false); err != nil && !isUnknown(err) {
		return wire.RemoveAnswer{}, err
	}
	removed, err := cache.Remove(cm.HubRepo, repoFiles)
	if err != nil {
		return wire.RemoveAnswer{}, fmt.Errorf("removing %s: %w", id, err)
	}
	if srv.o.Hub.Rescan != nil {
		srv.o.Hub.Rescan()
	}
	srv.log.Info("model removed", "model", id, "paths", len(removed))
	return wire.RemoveAnswer{Success: true, ID: id, Model: cm.HubName, Removed: removedOrEmpty(removed)}, nil
}

// notHubModelError refuses to delete a model that is not a Hub pull: a user's own file.
type notHubModelError struct{ id, path string }

func (e *notHubModelError) Error() string {
	if e.path == "" {
		return fmt.Sprintf("model %q cannot be deleted here: Hub downloads are off", e.id)
	}
	return fmt.Sprintf("model %q is the file %s, not a model pulled from the Hugging Face Hub: delete it yourself if you mean to", e.id, e.path)
}
