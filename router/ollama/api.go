package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/peer"
	"github.com/llamatray/llamatray/router/view"
	"github.com/llamatray/llamatray/router/wire"
)

// Host is what the Ollama API needs of the server that mounts it (router/httpapi's Server), so that
// an Ollama request gets the same body limits, name resolution, leases, queue, memory rules and
// errors as every other route.
type Host struct {
	// ReadBody reads r's body within the server's limits.
	ReadBody func(w http.ResponseWriter, r *http.Request) ([]byte, error)
	// Failure is the status, message and Retry-After the server answers err with; ok is false when
	// the client has gone and nothing is to be written.
	Failure func(r *http.Request, err error) (status int, msg string, retryAfter time.Duration, ok bool)
	// Resolve maps a model's name to its catalog ID as a model-routed request r resolves it (with
	// auto_pull, a POST naming a Hub model not on disk starts its download); nil r: no download.
	Resolve func(r *http.Request, name string) (string, error)
	// Proxy sends body to model id (a catalog ID or a peer's "peer:NAME/ID") as a model-routed
	// request, holding a lease on the model for the whole exchange; path replaces r's path upstream.
	Proxy func(w http.ResponseWriter, r *http.Request, id string, body []byte, stream bool, path string)
	// Waited is how long r waited for its model to be ready, once Proxy has a lease.
	Waited func(r *http.Request) time.Duration
	// CheckAutoload refuses r when model id is not running and r may not load it.
	CheckAutoload func(r *http.Request, id string) error
	// Outbound refuses r when it may not make Llamatray call out (a page of another site).
	Outbound func(r *http.Request) error
	// RemovePulled unloads model id and deletes its files from the Hub cache; a model that is not a
	// Hub pull is refused.
	RemovePulled func(r *http.Request, id string) error
	// UnderRules is an Ollama model's own defaults less those the configuration of model id gives.
	UnderRules func(id string, defaults map[string]any) map[string]any
}

// Engine is what the Ollama API asks of the engine; *engine.Engine is one.
type Engine interface {
	Load(ctx context.Context, name string) error
	Unload(ctx context.Context, name string, force bool) error
	// KeepAlive sets how long the model stays loaded once idle; nil: as configured.
	KeepAlive(name string, d *time.Duration) error
}

// API serves Ollama's API: apps that speak only Ollama's API use Llamatray's models through Host,
// with the same leases, queue, memory rules, Host check, CORS and keys as every other route.
type API struct {
	Host    Host
	Engine  Engine
	Views   view.Source
	Catalog interface { // nil: no model has Ollama manifests or aliases
		Lookup(name string) (catalog.Model, bool)
	}
	Peers *peer.Set    // nil: none
	Hub   *hub.Manager // nil: /api/pull answers 501
	// Alias gives a model one more name, or takes one away (/api/copy, /api/delete of a copy); nil:
	// /api/copy answers 501.
	Alias   func(id, alias string, add bool) error
	Log     *slog.Logger
	Started time.Time // when the server started: the created time of peers' models
}

func (api *API) Mount(m *mux.Router) {
	if api.Log == nil {
		api.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	m.HandleFunc("/", api.root).Methods(http.MethodGet, http.MethodHead)
	m.HandleFunc("/api/version", api.version).Methods(http.MethodGet, http.MethodHead)
	m.HandleFunc("/api/tags", api.tags).Methods(http.MethodGet, http.MethodHead)
	m.HandleFunc("/api/ps", api.ps).Methods(http.MethodGet)
	m.HandleFunc("/api/show", api.show).Methods(http.MethodPost)
	m.HandleFunc("/api/chat", api.chat).Methods(http.MethodPost)
	m.HandleFunc("/api/generate", api.generate).Methods(http.MethodPost)
	m.HandleFunc("/api/embed", api.embed).Methods(http.MethodPost)
	m.HandleFunc("/api/embeddings", api.embed).Methods(http.MethodPost)
	m.HandleFunc("/api/pull", api.pull).Methods(http.MethodPost) // api_models.go
	m.HandleFunc("/api/delete", api.deleteModel).Methods(http.MethodDelete)
	m.HandleFunc("/api/create", api.unsupported).Methods(http.MethodPost)
	m.HandleFunc("/api/push", api.unsupported).Methods(http.MethodPost)
	m.HandleFunc("/api/copy", api.copyModel).Methods(http.MethodPost)
}

// notFound says err is a model that is not there (rather than, say, one being pulled).
func notFound(err error) bool { return errors.As(err, new(*engine.UnknownModelError)) }

// refuse answers status with msg in Ollama's shape, {"error": "…"}.
func refuse(w http.ResponseWriter, status int, msg string) {
	wire.Write(w, status, ErrorResponse{Error: msg})
}

// root answers the probe Ollama's clients send before anything else.
func (api *API) root(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(Running))
	}
}

func (api *API) version(w http.ResponseWriter, r *http.Request) {
	wire.Write(w, http.StatusOK, map[string]string{"version": Version})
}

// fail writes err in Ollama's shape, with the status Host.Failure gives it.
func (api *API) fail(w http.ResponseWriter, r *http.Request, name string, err error) {
	status, msg, retry, ok := api.Host.Failure(r, err)
	if !ok {
		return
	}
	if errors.Is(err, ErrBadRequest) {
		status, msg = http.StatusBadRequest, strings.TrimPrefix(err.Error(), ErrBadRequest.Error()+": ")
	}
	if notFound(err) {
		status, msg = http.StatusNotFound, NotFoundText(r.URL.Path, name)
	}
	if retry > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((retry+time.Second-1)/time.Second))))
	}
	refuse(w, status, msg)
}

// read reads a JSON body into v; false when it answered an error. A request without a body
// is refused as Ollama refuses it.
func (api *API) read(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := api.Host.ReadBody(w, r)
	if err == nil && len(body) == 0 {
		refuse(w, http.StatusBadRequest, "missing request body")
		return false
	}
	if err == nil {
		if jerr := json.Unmarshal(body, v); jerr != nil {
			err = fmt.Errorf("%w: invalid JSON body: %w", ErrBadRequest, jerr)
		}
	}
	if err != nil {
		api.fail(w, r, "", err)
		return false
	}
	return true
}

// resolveName maps an Ollama name to a catalog ID: as sent, else without the ":latest" it was
// listed with, else as the Hub name it was pulled by (hf.co/ORG/REPO:QUANT resolves as
// ORG/REPO:QUANT, so the name a client pulled is the name it then uses); a peer's model resolves to
// its "peer:NAME/ID". false when it answered an error.
func (api *API) resolveName(w http.ResponseWriter, r *http.Request, name string) (string, bool) {
	if name == "" {
		if r.URL.Path == "/api/generate" { // as Ollama answers it
			refuse(w, http.StatusNotFound, "model '' not found")
		} else {
			refuse(w, http.StatusBadRequest, "model is required")
		}
		return "", false
	}
	if ref, ok := api.peerRef(r, name, true); ok { // api_peers.go
		return ref, true
	}
	id, err := api.Host.Resolve(r, name)
	for _, alt := range AltNames(name) {
		if err == nil {
			break
		}
		if id2, err2 := api.Host.Resolve(r, alt); err2 == nil || !notFound(err2) {
			id, err = id2, err2
		}
	}
	if ref, ok := api.peerRef(r, name, false); ok && notFound(err) {
		return ref, true
	}
	if err != nil {
		api.fail(w, r, name, err)
		return "", false
	}
	return id, true
}

// applyKeepAlive applies a request's keep_alive to the model's current or next child; without one the
// configured idle timers apply again, as Ollama goes back to its default.
func (api *API) applyKeepAlive(id string, ka *Duration) {
	var d *time.Duration
	if ka != nil {
		d = &ka.Duration
	}
	if err := api.Engine.KeepAlive(id, d); err != nil {
		api.Log.Debug("keep_alive not applied", "model", id, "err", err)
	}
}

func (api *API) chat(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req ChatRequest
	if !api.read(w, r, &req) {
		return
	}
	api.infer(w, r, start, KindChat, req.Model, req.KeepAlive, len(req.Messages) == 0, &req.Options, func(id, system string) (Upstream, error) {
		req.Model = id
		if system != "" && req.Messages[0].Role != "system" {
			req.Messages = append([]Message{{Role: "system", Content: system}}, req.Messages...)
		}
		return Chat(req)
	})
}

func (api *API) generate(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req GenerateRequest
	if !api.read(w, r, &req) {
		return
	}
	api.infer(w, r, start, KindGenerate, req.Model, req.KeepAlive, req.Prompt == "" && len(req.Images) == 0, &req.Options, func(id, system string) (Upstream, error) {
		req.Model = id
		if req.System == "" && !req.Raw {
			req.System = system
		}
		return Generate(req)
	})
}

// infer serves a chat or a generate request for the model asked: it lays the model's own
// defaults under *opts and sends what build makes of the request, given the model's ID and its own
// system prompt.
func (api *API) infer(w http.ResponseWriter, r *http.Request, start time.Time, kind Kind, asked string, ka *Duration, empty bool, opts *map[string]any, build func(id, system string) (Upstream, error)) {
	id, ok := api.target(w, r, asked, ka, kind, empty)
	if !ok {
		return
	}
	defaults, system := api.defaults(id, asked)
	*opts = WithDefaults(*opts, defaults)
	up, err := build(id, system)
	api.send(w, r, start, kind, asked, id, ka, up, err)
}

// embed serves /api/embed (input: a string or a list of strings) and the older /api/embeddings (one
// prompt).
func (api *API) embed(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// Each endpoint reads only its own fields, as Ollama's do: the other's pass whatever they hold.
	var req EmbedRequest
	var body any = &struct {
		*EmbedRequest
		Prompt any `json:"prompt"`
	}{EmbedRequest: &req}
	if r.URL.Path != "/api/embed" {
		body = &struct {
			*EmbedRequest
			Input    any `json:"input"`
			Truncate any `json:"truncate"`
		}{EmbedRequest: &req}
	}
	if !api.read(w, r, body) {
		return
	}
	kind, inputs, err := KindEmbeddings, []string{req.Prompt}, error(nil)
	empty := req.Prompt == ""
	if r.URL.Path == "/api/embed" {
		kind = KindEmbed
		inputs, err = EmbedInputs(req.Input) // said once the model is known to exist
		empty = err == nil && len(inputs) == 0
	}
	id, ok := api.target(w, r, req.Model, req.KeepAlive, kind, empty)
	if !ok {
		return
	}
	api.send(w, r, start, kind, req.Model, id, req.KeepAlive, Embeddings(id, inputs), err)
}

// target resolves the model a request asks for and checks that it does what kind asks; a
// request with nothing to answer (empty) it serves itself by loading or unloading the model. false
// when it answered.
func (api *API) target(w http.ResponseWriter, r *http.Request, asked string, ka *Duration, kind Kind, empty bool) (string, bool) {
	id, ok := api.resolveName(w, r, asked)
	if !ok {
		return "", false
	}
	if empty {
		api.loadOnly(w, r, id, asked, ka, kind)
		return "", false
	}
	if v, err := api.Views.Model(id); err == nil { // else the proxy path reports it
		// an embedding model neither chats nor generates
		if err := FromView(v).Supports(map[Kind]string{KindChat: "chat", KindGenerate: "generate"}[kind], asked); err != nil {
			api.fail(w, r, asked, err)
			return "", false
		}
	}
	return id, true
}

// send applies keep_alive and sends up to model id's child, or answers err (the request could
// not be turned into one).
func (api *API) send(w http.ResponseWriter, r *http.Request, start time.Time, kind Kind, asked, id string, ka *Duration, up Upstream, err error) {
	if err != nil {
		api.fail(w, r, asked, err)
		return
	}
	api.applyKeepAlive(id, ka)
	ow := NewWriter(w, kind, asked, up.Stream, start)
	ow.TopLogprobs = up.TopLogprobs
	ow.Load = func() time.Duration { return api.Host.Waited(r) }
	api.Host.Proxy(ow, r, id, up.Body, up.Stream, up.Path)
	ow.Finish()
}

// loadOnly serves a request with nothing to answer, as Ollama does: it loads the model (or,
// with keep_alive 0, unloads it) and reports that in one object.
func (api *API) loadOnly(w http.ResponseWriter, r *http.Request, id, name string, ka *Duration, kind Kind) {
	reason := "load"
	if ka != nil && ka.Duration == 0 {
		reason = "unload"
	}
	_, _, onPeer := peer.ParseRef(id)
	switch {
	case onPeer: // another machine's model: it loads with its first request there
	case reason == "unload":
		if err := api.Engine.Unload(r.Context(), id, false); err != nil {
			api.fail(w, r, name, err)
			return
		}
	default:
		if err := api.Host.CheckAutoload(r, id); err != nil { // a cross-site page never loads a model
			api.fail(w, r, name, err)
			return
		}
		api.applyKeepAlive(id, ka)
		if err := api.Engine.Load(r.Context(), id); err != nil {
			api.fail(w, r, name, err)
			return
		}
	}
	now := Stamp(time.Now())
	switch kind {
	case KindChat:
		wire.Write(w, http.StatusOK, ChatResponse{Model: name, CreatedAt: now, Message: Message{Role: "assistant"}, Done: true, DoneReason: reason})
	case KindGenerate:
		wire.Write(w, http.StatusOK, GenerateResponse{Model: name, CreatedAt: now, Done: true, DoneReason: reason})
	case KindEmbed:
		wire.Write(w, http.StatusOK, EmbedResponse{Model: name, Embeddings: [][]float64{}})
	default:
		wire.Write(w, http.StatusOK, EmbeddingsResponse{Embedding: []float64{}})
	}
}

// unsupported answers what Llamatray does not do: it serves GGUF files, it does not build
// or publish Ollama images.
func (api *API) unsupported(w http.ResponseWriter, r *http.Request) {
	what := strings.TrimPrefix(r.URL.Path, "/api/")
	msg := fmt.Sprintf("Llamatray does not %s Ollama models: it serves GGUF files from its model folders and the Hugging Face Hub", what)
	switch what {
	case "create":
		msg += "; put the .gguf file in a model folder (or `llamatray pull ORG/REPO:QUANT`) and it is listed"
	case "copy":
		msg += "; give a model another name with an alias in its settings (`aliases` in the configuration)"
	}
	refuse(w, http.StatusNotImplemented, msg)
}

// copyModel serves POST /api/copy: the destination becomes one more name of the source's model,
// an alias saved in the configuration (Llamatray never copies a model's file).
func (api *API) copyModel(w http.ResponseWriter, r *http.Request) {
	if api.Alias == nil {
		api.unsupported(w, r)
		return
	}
	var req CopyRequest
	if !api.read(w, r, &req) {
		return
	}
	if req.Source == "" || req.Destination == "" {
		refuse(w, http.StatusBadRequest, "source and destination are required")
		return
	}
	id, err := api.Host.Resolve(nil, req.Source)
	if err != nil {
		if base, ok := Unlisted(req.Source); ok {
			id, err = api.Host.Resolve(nil, base)
		}
	}
	if err != nil {
		if notFound(err) {
			refuse(w, http.StatusNotFound, fmt.Sprintf("model %q not found", req.Source)) // Ollama's words
			return
		}
		api.fail(w, r, req.Source, err)
		return
	}
	dest, _ := Unlisted(req.Destination) // listed again with the default tag
	if view.PathLike(dest) {
		refuse(w, http.StatusBadRequest, fmt.Sprintf("%q is not a model name", req.Destination))
		return
	}
	if err := api.Alias(id, dest, true); err != nil {
		refuse(w, http.StatusBadRequest, err.Error())
		return
	}
	api.Log.Info("alias added", "model", id, "alias", dest)
	w.WriteHeader(http.StatusOK)
}
