package ollama

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/peer"
	"github.com/llamatray/llamatray/router/wire"
)

// defaults are what a model's Ollama manifest chose (its params and system layers), for the
// requests that leave them out: the manifest of the name the request used (one blob may have
// several, each its own), else the model's first; nil for a model that is not in an Ollama store.
func (api *API) defaults(id, asked string) (map[string]any, string) {
	if api.Catalog == nil {
		return nil, ""
	}
	c, ok := api.Catalog.Lookup(id)
	if !ok || len(c.Ollama) == 0 {
		return nil, ""
	}
	if n, ok := c.OllamaNamed(asked); ok {
		return api.Host.UnderRules(id, n.Defaults), n.System
	}
	return api.Host.UnderRules(id, c.Defaults), c.Ollama[0].System
}

// models are the local models as Ollama lists them, each of a model's other names (an Ollama
// store's names of its blob, its aliases) one more entry.
func (api *API) models() []Model {
	views := api.Views.Models()
	out := make([]Model, 0, len(views))
	for _, v := range views {
		m := FromView(v)
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
				names = append(names, ListedName(a))
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
func (api *API) tags(w http.ResponseWriter, r *http.Request) {
	local := api.models()
	wire.Write(w, http.StatusOK, Tags(append(local, api.peerList(r, local)...))) // api_peers.go
}

// ps serves GET /api/ps: the models running now, peers' models their peer reports loaded included.
func (api *API) ps(w http.ResponseWriter, r *http.Request) {
	local := api.models()
	wire.Write(w, http.StatusOK, PS(append(local, api.peerList(r, local)...)))
}

func (api *API) show(w http.ResponseWriter, r *http.Request) {
	var req struct {
		NameRequest
		Stream  any  `json:"stream"`  // none in /api/show: any value passes, as in Ollama
		Verbose bool `json:"verbose"` // not read (the answer is the same), but a bool, as in Ollama
	}
	if !api.read(w, r, &req) {
		return
	}
	name := req.Named()
	id, ok := api.resolveName(w, r, name)
	if !ok {
		return
	}
	if _, _, isRef := peer.ParseRef(id); isRef && api.peerShow(w, id) { // api_peers.go
		return
	}
	v, err := api.Views.Model(id)
	if err != nil {
		api.fail(w, r, name, err)
		return
	}
	wire.Write(w, http.StatusOK, Show(FromView(v)))
}

// deleteModel serves DELETE /api/delete: a model pulled from the Hub is removed as DELETE /models
// removes it; a file of the user's own, or one in Ollama's store, is not deleted.
func (api *API) deleteModel(w http.ResponseWriter, r *http.Request) {
	var req NameRequest
	if !api.read(w, r, &req) {
		return
	}
	id, ok := api.resolveName(w, r, req.Named())
	if !ok {
		return
	}
	var err error
	if alias := api.configuredAlias(id, req.Named()); alias != "" && api.Alias != nil {
		err = api.Alias(id, alias, false) // a copy (/api/copy): the name goes, the model and its other names stay
	} else {
		err = api.Host.RemovePulled(r, id)
	}
	if err != nil {
		api.fail(w, r, req.Named(), err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// configuredAlias is the alias of model id that name (as an Ollama client sends it) is, "" when
// it is not one.
func (api *API) configuredAlias(id, name string) string {
	if api.Catalog == nil {
		return ""
	}
	c, ok := api.Catalog.Lookup(id)
	if !ok {
		return ""
	}
	base, _ := Unlisted(name)
	for _, a := range c.Aliases {
		if strings.EqualFold(a, name) || strings.EqualFold(a, base) {
			return a
		}
	}
	return ""
}

// pull serves POST /api/pull: a download from the Hugging Face Hub, with Ollama's status
// lines as it goes (stream) or one status at its end. The download belongs to the Hub manager: a
// client that goes away does not stop it.
func (api *API) pull(w http.ResponseWriter, r *http.Request) {
	var req NameRequest
	if !api.read(w, r, &req) {
		return
	}
	if api.Hub == nil {
		refuse(w, http.StatusNotImplemented, "downloads from the Hugging Face Hub are off in this Llamatray")
		return
	}
	if err := api.Host.Outbound(r); err != nil {
		api.fail(w, r, req.Named(), err)
		return
	}
	ref, err := hub.ParseRef(HubName(req.Named()))
	if err != nil {
		refuse(w, http.StatusBadRequest, "pull model manifest: Llamatray pulls GGUF models from the Hugging Face Hub; name one as hf.co/ORG/REPO:QUANT ("+err.Error()+")")
		return
	}
	p := &PullWriter{W: w, Stream: streamOf(req.Stream)}
	if ref.Quant != "" && api.Catalog != nil {
		if m, ok := api.Catalog.Lookup(ref.String()); ok && m.HubName != "" {
			p.Status("pulling manifest")
			p.Done(ProgressResponse{Status: "success"})
			return
		}
	}
	events, stop := api.Hub.Subscribe()
	defer stop()
	st, err := api.Hub.Start(r.Context(), ref)
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
			if cur, ok := api.Hub.Status(st.Model); ok && cur.State != hub.StateDownloading && p.Event(cur) {
				return
			}
		}
	}
}

// PullWriter writes /api/pull's answer: NDJSON status lines, or one object when it is not a Stream.
type PullWriter struct {
	W       http.ResponseWriter
	Stream  bool
	started bool
}

func (p *PullWriter) line(v any) {
	if !p.started {
		p.started = true
		p.W.Header().Set("Content-Type", "application/x-ndjson")
		p.W.WriteHeader(http.StatusOK)
	}
	b, _ := json.Marshal(v)
	_, _ = p.W.Write(append(b, '\n'))
	if f, ok := p.W.(http.Flusher); ok {
		f.Flush()
	}
}

// Status writes a progress line, in a stream only.
func (p *PullWriter) Status(s string) {
	if p.Stream {
		p.line(ProgressResponse{Status: s})
	}
}

// Done writes the last line: success, or the error.
func (p *PullWriter) Done(v any) {
	if p.Stream || p.started {
		p.line(v)
		return
	}
	status := http.StatusOK
	if _, failed := v.(ErrorResponse); failed {
		status = http.StatusInternalServerError
	}
	wire.Write(p.W, status, v)
}

// Event writes what a pull's state says; true once it ended.
func (p *PullWriter) Event(st hub.PullStatus) bool {
	switch st.State {
	case hub.StateDownloading:
		if p.Stream {
			for _, f := range st.Progress.Files {
				p.line(ProgressResponse{Status: "pulling " + f.Path, Digest: f.Path, Total: f.Total, Completed: f.Done})
			}
		}
		return false
	case hub.StateDownloaded:
		p.Status("verifying sha256 digest")
		p.Status("writing manifest")
		p.Done(ProgressResponse{Status: "success"})
	default:
		msg := st.Error
		if msg == "" {
			msg = "the download " + st.State
		}
		p.Done(ErrorResponse{Error: msg})
	}
	return true
}
