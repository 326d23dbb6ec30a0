package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/llamatray/llamatray/router/ollama"
	"github.com/llamatray/llamatray/router/peer"
)

// ollamaAPI serves Ollama's API (router/ollama translates): apps that speak only Ollama's API use
// Llamatray's models with the same leases, queue, memory rules, Host check, CORS and keys as every
// other route, through the Server it is a view of.
type ollamaAPI struct{ *Server }

// ollamaRoutes declares Ollama's endpoints.
func (srv *Server) ollamaRoutes(m *mux.Router) {
	api := ollamaAPI{srv}
	m.HandleFunc("/", api.root).Methods(http.MethodGet, http.MethodHead)
	m.HandleFunc("/api/version", api.version).Methods(http.MethodGet, http.MethodHead)
	m.HandleFunc("/api/tags", api.tags).Methods(http.MethodGet, http.MethodHead)
	m.HandleFunc("/api/ps", api.ps).Methods(http.MethodGet)
	m.HandleFunc("/api/show", api.show).Methods(http.MethodPost)
	m.HandleFunc("/api/chat", api.chat).Methods(http.MethodPost)
	m.HandleFunc("/api/generate", api.generate).Methods(http.MethodPost)
	m.HandleFunc("/api/embed", api.embed).Methods(http.MethodPost)
	m.HandleFunc("/api/embeddings", api.embeddings).Methods(http.MethodPost)
	m.HandleFunc("/api/pull", api.pull).Methods(http.MethodPost) // ollama_hub.go
	m.HandleFunc("/api/delete", api.deleteModel).Methods(http.MethodDelete)
	m.HandleFunc("/api/create", api.unsupported).Methods(http.MethodPost)
	m.HandleFunc("/api/push", api.unsupported).Methods(http.MethodPost)
	m.HandleFunc("/api/copy", api.copyModel).Methods(http.MethodPost)
}

// root answers the probe Ollama's clients send before anything else.
func (api ollamaAPI) root(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(ollama.Running))
	}
}

func (api ollamaAPI) version(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": ollama.Version})
}

// fail writes err in Ollama's shape, {"error": "…"}, with the status errorFor gives it.
func (api ollamaAPI) fail(w http.ResponseWriter, r *http.Request, name string, err error) {
	e, ok := failed(r, err)
	if !ok {
		return
	}
	msg := e.Message
	if errors.Is(err, ollama.ErrBadRequest) {
		e.Status, msg = http.StatusBadRequest, strings.TrimPrefix(err.Error(), ollama.ErrBadRequest.Error()+": ")
	}
	if isNotFound(err) {
		e.Status, msg = http.StatusNotFound, ollama.NotFoundText(r.URL.Path, name)
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", retryAfterSeconds(e.RetryAfter))
	}
	writeJSON(w, e.Status, ollama.ErrorResponse{Error: msg})
}

// read reads a JSON body into v; false when it answered an error. A request without a body
// is refused as Ollama refuses it.
func (api ollamaAPI) read(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := api.readBody(w, r)
	if err == nil && len(body) == 0 {
		writeJSON(w, http.StatusBadRequest, ollama.ErrorResponse{Error: "missing request body"})
		return false
	}
	if err == nil {
		if jerr := json.Unmarshal(body, v); jerr != nil {
			err = fmt.Errorf("%w: %w", errInvalidJSON, jerr)
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
// ORG/REPO:QUANT, so the name a client pulled is the name it then uses). false when it answered
// an error.
func (api ollamaAPI) resolveName(w http.ResponseWriter, r *http.Request, name string) (string, bool) {
	if name == "" {
		if r.URL.Path == "/api/generate" { // as Ollama answers it
			writeJSON(w, http.StatusNotFound, ollama.ErrorResponse{Error: "model '' not found"})
		} else {
			writeJSON(w, http.StatusBadRequest, ollama.ErrorResponse{Error: "model is required"})
		}
		return "", false
	}
	if ref, ok := api.peerRef(r, name, true); ok { // peers.go
		return ref, true
	}
	id, err := api.resolveRequest(r, name)
	for _, alt := range ollama.AltNames(name) {
		if err == nil {
			break
		}
		if id2, err2 := api.resolveRequest(r, alt); err2 == nil || !isNotFound(err2) {
			id, err = id2, err2
		}
	}
	if ref, ok := api.peerRef(r, name, false); ok && isNotFound(err) {
		return ref, true
	}
	if err != nil {
		api.fail(w, r, name, err)
		return "", false
	}
	return id, true
}

// isNotFound says err is a model that is not there (rather than, say, one being pulled).
func isNotFound(err error) bool {
	var np *notPulledError
	return isUnknown(err) || errors.As(err, &np)
}

// applyKeepAlive applies a request's keep_alive to the model's current or next child; without one the
// configured idle timers apply again, as Ollama goes back to its default.
func (api ollamaAPI) applyKeepAlive(id string, ka *ollama.Duration) {
	var d *time.Duration
	if ka != nil {
		v := ka.Duration
		d = &v
	}
	if err := api.o.Engine.KeepAlive(id, d); err != nil {
		api.log.Debug("keep_alive not applied", "model", id, "err", err)
	}
}

func (api ollamaAPI) chat(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req ollama.ChatRequest
	if !api.read(w, r, &req) {
		return
	}
	api.infer(w, r, start, ollama.KindChat, req.Model, req.KeepAlive, len(req.Messages) == 0, &req.Options, func(id, system string) (ollama.Upstream, error) {
		req.Model = id
		if system != "" && req.Messages[0].Role != "system" {
			req.Messages = append([]ollama.Message{{Role: "system", Content: system}}, req.Messages...)
		}
		return ollama.Chat(req)
	})
}

func (api ollamaAPI) generate(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req ollama.GenerateRequest
	if !api.read(w, r, &req) {
		return
	}
	api.infer(w, r, start, ollama.KindGenerate, req.Model, req.KeepAlive, req.Prompt == "" && len(req.Images) == 0, &req.Options, func(id, system string) (ollama.Upstream, error) {
		req.Model = id
		if req.System == "" && !req.Raw {
			req.System = system
		}
		return ollama.Generate(req)
	})
}

// infer serves a chat or a generate request for the model asked: it lays the model's own
// defaults under *opts and sends what build makes of the request, given the model's ID and its own
// system prompt.
func (api ollamaAPI) infer(w http.ResponseWriter, r *http.Request, start time.Time, kind ollama.Kind, asked string, ka *ollama.Duration, empty bool, opts *map[string]any, build func(id, system string) (ollama.Upstream, error)) {
	id, ok := api.target(w, r, asked, ka, kind, empty)
	if !ok {
		return
	}
	defaults, system := api.defaults(id, asked)
	*opts = ollama.WithDefaults(*opts, defaults)
	up, err := build(id, system)
	api.send(w, r, start, kind, asked, id, ka, up, err)
}

func (api ollamaAPI) embed(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req ollama.EmbedRequest
	if !api.read(w, r, &req) {
		return
	}
	inputs, err := ollama.EmbedInputs(req.Input) // said once the model is known to exist
	id, ok := api.target(w, r, req.Model, req.KeepAlive, ollama.KindEmbed, err == nil && len(inputs) == 0)
	if !ok {
		return
	}
	api.send(w, r, start, ollama.KindEmbed, req.Model, id, req.KeepAlive, ollama.Embeddings(id, inputs), err)
}

func (api ollamaAPI) embeddings(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req ollama.EmbeddingsRequest
	if !api.read(w, r, &req) {
		return
	}
	id, ok := api.target(w, r, req.Model, req.KeepAlive, ollama.KindEmbeddings, req.Prompt == "")
	if !ok {
		return
	}
	api.send(w, r, start, ollama.KindEmbeddings, req.Model, id, req.KeepAlive, ollama.Embeddings(id, []string{req.Prompt}), nil)
}

// target resolves the model a request asks for and checks that it does what kind asks; a
// request with nothing to answer (empty) it serves itself by loading or unloading the model. false
// when it answered.
func (api ollamaAPI) target(w http.ResponseWriter, r *http.Request, asked string, ka *ollama.Duration, kind ollama.Kind, empty bool) (string, bool) {
	id, ok := api.resolveName(w, r, asked)
	if !ok {
		return "", false
	}
	if empty {
		api.loadOnly(w, r, id, asked, ka, kind)
		return "", false
	}
	what := map[ollama.Kind]string{ollama.KindChat: "chat", ollama.KindGenerate: "generate"}[kind]
	if err := api.supports(id, asked, what); err != nil {
		api.fail(w, r, asked, err)
		return "", false
	}
	return id, true
}

// send applies keep_alive and sends up to model id's child, or answers err (the request could
// not be turned into one).
func (api ollamaAPI) send(w http.ResponseWriter, r *http.Request, start time.Time, kind ollama.Kind, asked, id string, ka *ollama.Duration, up ollama.Upstream, err error) {
	if err != nil {
		api.fail(w, r, asked, err)
		return
	}
	api.applyKeepAlive(id, ka)
	api.serve(w, r, start, kind, asked, id, up)
}

// supports refuses what the model cannot do, in Ollama's words: an embedding model neither
// chats nor generates.
func (api ollamaAPI) supports(id, asked, what string) error {
	v, err := api.views.Model(id)
	if err != nil {
		return nil // the proxy path reports it
	}
	return ollama.FromView(v).Supports(what, asked)
}

// serve sends up to model id's child, holding a lease as every proxied request does, and
// writes the child's answer in Ollama's shape.
func (api ollamaAPI) serve(w http.ResponseWriter, r *http.Request, start time.Time, kind ollama.Kind, name, id string, up ollama.Upstream) {
	ow := ollama.NewWriter(w, kind, name, up.Stream, start)
	ow.TopLogprobs = up.TopLogprobs
	ow.Load = func() time.Duration {
		if info := infoFrom(r.Context()); info != nil {
			return info.waited
		}
		return 0
	}
	api.serveModel(ow, r, id, up.Body, up.Stream, up.Path, "")
	ow.Finish()
}

// loadOnly serves a request with nothing to answer, as Ollama does: it loads the model (or,
// with keep_alive 0, unloads it) and reports that in one object.
func (api ollamaAPI) loadOnly(w http.ResponseWriter, r *http.Request, id, name string, ka *ollama.Duration, kind ollama.Kind) {
	reason := "load"
	if ka != nil && ka.Duration == 0 {
		reason = "unload"
	}
	_, _, onPeer := peer.ParseRef(id)
	switch {
	case onPeer: // another machine's model: it loads with its first request there
	case reason == "unload":
		if err := api.o.Engine.Unload(r.Context(), id, false); err != nil {
			api.fail(w, r, name, err)
			return
		}
	default:
		if err := api.checkAutoload(r, id); err != nil { // a cross-site page never loads a model
			api.fail(w, r, name, err)
			return
		}
		api.applyKeepAlive(id, ka)
		if err := api.o.Engine.Load(r.Context(), id); err != nil {
			api.fail(w, r, name, err)
			return
		}
	}
	now := ollama.Stamp(time.Now())
	switch kind {
	case ollama.KindChat:
		writeJSON(w, http.StatusOK, ollama.ChatResponse{Model: name, CreatedAt: now, Message: ollama.Message{Role: "assistant"}, Done: true, DoneReason: reason})
	case ollama.KindGenerate:
		writeJSON(w, http.StatusOK, ollama.GenerateResponse{Model: name, CreatedAt: now, Done: true, DoneReason: reason})
	case ollama.KindEmbed:
		writeJSON(w, http.StatusOK, ollama.EmbedResponse{Model: name, Embeddings: [][]float64{}})
	default:
		writeJSON(w, http.StatusOK, ollama.EmbeddingsResponse{Embedding: []float64{}})
	}
}

// unsupported answers what Llamatray does not do: it serves GGUF files, it does not build
// or publish Ollama images.
func (api ollamaAPI) unsupported(w http.ResponseWriter, r *http.Request) {
	what := strings.TrimPrefix(r.URL.Path, "/api/")
	msg := fmt.Sprintf("Llamatray does not %s Ollama models: it serves GGUF files from its model folders and the Hugging Face Hub", what)
	switch what {
	case "create":
		msg += "; put the .gguf file in a model folder (or `llamatray pull ORG/REPO:QUANT`) and it is listed"
	case "copy":
		msg += "; give a model another name with an alias in its settings (`aliases` in the configuration)"
	}
	writeJSON(w, http.StatusNotImplemented, ollama.ErrorResponse{Error: msg})
}

// copyModel serves POST /api/copy: the destination becomes one more name of the source's model,
// an alias saved in the configuration (Llamatray never copies a model's file).
func (api ollamaAPI) copyModel(w http.ResponseWriter, r *http.Request) {
	if api.o.Alias == nil {
		api.unsupported(w, r)
		return
	}
	var req ollama.CopyRequest
	if !api.read(w, r, &req) {
		return
	}
	if req.Source == "" || req.Destination == "" {
		writeJSON(w, http.StatusBadRequest, ollama.ErrorResponse{Error: "source and destination are required"})
		return
	}
	id, err := api.resolve(req.Source)
	if err != nil {
		if base, ok := ollama.Unlisted(req.Source); ok {
			id, err = api.resolve(base)
		}
	}
	if err != nil {
		if isNotFound(err) {
			writeJSON(w, http.StatusNotFound, ollama.ErrorResponse{Error: fmt.Sprintf("model %q not found", req.Source)}) // Ollama's words
			return
		}
		api.fail(w, r, req.Source, err)
		return
	}
	dest, _ := ollama.Unlisted(req.Destination) // listed again with the default tag
	if looksLikePath(dest) {
		writeJSON(w, http.StatusBadRequest, ollama.ErrorResponse{Error: fmt.Sprintf("%q is not a model name", req.Destination)})
		return
	}
	if err := api.o.Alias(id, dest, true); err != nil {
		writeJSON(w, http.StatusBadRequest, ollama.ErrorResponse{Error: err.Error()})
		return
	}
	api.log.Info("alias added", "model", id, "alias", dest)
	w.WriteHeader(http.StatusOK)
}
