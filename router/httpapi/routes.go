package httpapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/gorilla/mux"
)

// proxiedPOST are the model-routed endpoints whose model comes from the JSON body.
var proxiedPOST = []string{
	// OpenAI
	"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses",
	"/v1/rerank", "/rerank", "/v1/reranking",
	// Anthropic
	"/v1/messages", "/v1/messages/count_tokens",
	// llama.cpp native
	"/completion", "/completions", "/chat/completions", "/embedding", "/embeddings", "/infill",
	"/tokenize", "/detokenize", "/apply-template",
}

// proxiedGET are the model-routed endpoints whose model comes from ?model= (the body, if any,
// still counts first). /metrics naming no model is Llamatray's own (modelRoute).
var proxiedGET = []string{"/slots", "/metrics", "/lora-adapters"}

// fastRoutes sends a POST to one of proxiedPOST straight to modelRoute, as the mux would, without
// matching the mux's routes one regexp at a time (they are most of the requests); anything else
// goes to next.
func (srv *Server) fastRoutes(next http.Handler) http.Handler {
	exact := make(map[string]bool, len(proxiedPOST))
	for _, p := range proxiedPOST {
		exact[p] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.RawPath == "" && exact[r.URL.Path] {
			srv.modelRoute(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (srv *Server) routes() *mux.Router {
	m := mux.NewRouter()
	m.SkipClean(true)    // /upstream paths reach the child exactly as sent
	m.UseEncodedPath()   // {model} is one escaped segment
	m.StrictSlash(false) // no redirects between /x and /x/
	m.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeError(w, r, errNotFound) })
	m.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeError(w, r, errMethod) })

	// Management API, shaped like llama.cpp's router.
	m.HandleFunc("/health", srv.health).Methods(http.MethodGet, http.MethodHead)
	m.HandleFunc("/v1/health", srv.health).Methods(http.MethodGet, http.MethodHead) // llama.cpp's second name
	m.HandleFunc("/api/status", srv.apiStatus).Methods(http.MethodGet)
	m.HandleFunc("/api/activity", srv.activityDoc).Methods(http.MethodGet) // activity.go
	m.HandleFunc("/models", srv.listModels).Methods(http.MethodGet)
	m.HandleFunc("/v1/models", srv.listModels).Methods(http.MethodGet)
	m.HandleFunc("/v1/models/{model:.+}", srv.getModel).Methods(http.MethodGet) // ORG/REPO:QUANT escaped or not
	m.HandleFunc("/models/load", srv.loadModel).Methods(http.MethodPost)
	m.HandleFunc("/models/unload", srv.loadModel).Methods(http.MethodPost)
	m.HandleFunc("/models/pin", srv.pinModel).Methods(http.MethodPost)
	m.HandleFunc("/models/logs", srv.modelLogs).Methods(http.MethodGet)
	m.HandleFunc("/models/events", srv.events).Methods(http.MethodGet)
	m.HandleFunc("/models/sse", srv.modelsSSE).Methods(http.MethodGet) // llama.cpp's router events
	srv.hubRoutes(m)                                                   // POST and DELETE /models, /api/hub/...

	// llama-server builds from llama.cpp's releases (llamaserver.go).
	m.HandleFunc("/api/llama-server", srv.llamaServers).Methods(http.MethodGet)
	m.HandleFunc("/api/llama-server/install", srv.installLlamaServer).Methods(http.MethodPost)
	m.HandleFunc("/api/llama-server/use", srv.useLlamaServer).Methods(http.MethodPost)

	// Model-routed endpoints, proxied to the model's child.
	for _, p := range proxiedPOST {
		m.HandleFunc(p, srv.modelRoute).Methods(http.MethodPost)
	}
	for _, p := range proxiedGET {
		m.HandleFunc(p, srv.modelRoute).Methods(http.MethodGet, http.MethodPost)
	}
	m.HandleFunc("/slots/{slot}", srv.modelRoute).Methods(http.MethodPost)
	m.HandleFunc("/props", srv.props).Methods(http.MethodGet, http.MethodPost)

	srv.ollamaRoutes(m) // Ollama's API (router/ollama, mounted in ollama.go)
	srv.peerRoutes(m)   // /api/peers (peers.go)

	// Passthrough to one child, any method, prefix stripped (llama-server's web UI works through it).
	m.HandleFunc("/upstream/{model}", srv.upstreamRoot)
	m.PathPrefix("/upstream/{model}/").HandlerFunc(srv.upstream)
	return m
}

// modelRoute proxies a model-routed request: the model is the body's "model", else ?model=, else
// the default model. The body is read once and replayed upstream byte for byte. /metrics naming no
// model gets Llamatray's own metrics in Prometheus's text format (router/metrics), whatever the
// default model.
func (srv *Server) modelRoute(w http.ResponseWriter, r *http.Request) {
	body, f, ok := srv.routedBody(w, r)
	if !ok {
		return
	}
	if f.Model == "" && r.URL.Path == "/metrics" {
		srv.metrics.ServeHTTP(w, r)
		return
	}
	srv.serveModel(w, r, f.Model, body, f.Stream, "", "")
}

// routedBody reads a model-routed request's body and scans it; the model is the body's "model",
// else ?model= ("" when neither names one). On an error it has answered, and ok is false.
func (srv *Server) routedBody(w http.ResponseWriter, r *http.Request) (body []byte, f bodyFields, ok bool) {
	body, err := srv.readBody(w, r)
	if err != nil {
		writeError(w, r, err)
		return nil, f, false
	}
	f, err = scanBody(body)
	if err != nil {
		writeError(w, r, err)
		return nil, f, false
	}
	if f.Model == "" {
		f.Model = r.URL.Query().Get("model")
	}
	return body, f, true
}

// upstreamRoot sends /upstream/{model} to /upstream/{model}/ so the web UI's relative links resolve.
func (srv *Server) upstreamRoot(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		srv.upstream(w, r)
		return
	}
	u := *r.URL
	u.Path, u.RawPath = r.URL.Path+"/", ""
	if r.URL.RawPath != "" {
		u.RawPath = r.URL.RawPath + "/"
	}
	http.Redirect(w, r, u.RequestURI(), http.StatusMovedPermanently)
}

// upstream serves /upstream/{model}/...: any method, the path after the model forwarded as is.
func (srv *Server) upstream(w http.ResponseWriter, r *http.Request) {
	name, rest, ok := srv.upstreamModel(strings.TrimPrefix(r.URL.EscapedPath(), "/upstream/"))
	if !ok || name == "" {
		writeError(w, r, errNotFound)
		return
	}
	if rest == "" { // /upstream/MODEL, without its slash
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			srv.upstreamRoot(w, r)
			return
		}
		rest = "/"
	}
	path, err := url.PathUnescape(rest)
	if err != nil {
		writeError(w, r, errNotFound)
		return
	}
	rawPath := ""
	if path != rest {
		rawPath = rest
	}
	body, err := srv.readBody(w, r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	srv.serveModel(w, r, name, body, false, path, rawPath)
}

// muxVar returns an unescaped path variable (routes match on the escaped path).
func muxVar(r *http.Request, name string) (string, bool) {
	v, ok := mux.Vars(r)[name]
	if !ok {
		return "", false
	}
	u, err := url.PathUnescape(v)
	if err != nil {
		return "", false
	}
	return u, true
}

// maxModelSegments bounds how many path segments a model name in /upstream/... may take unescaped:
// ORG/REPO:QUANT takes two, a variant of it or a clash-qualified file name a few more.
const maxModelSegments = 4

// upstreamModel splits the escaped path after "/upstream/" into the model's name (unescaped) and
// the escaped path for the child. A model's name is one segment, escaped as
// "Org%2FRepo:Q8_0", or, written as it is ("/upstream/Org/Repo:Q8_0/health"), the most segments
// from the start that name a model. ok is false when the name does not unescape.
func (srv *Server) upstreamModel(tail string) (name, rest string, ok bool) {
	segs := strings.Split(tail, "/")
	for n := min(len(segs), maxModelSegments); n > 1; n-- {
		esc := strings.Join(segs[:n], "/")
		v, err := url.PathUnescape(esc)
		if err != nil {
			continue
		}
		if _, err := srv.o.Engine.Resolve(v); err == nil {
			return v, tail[len(esc):], true
		}
	}
	v, err := url.PathUnescape(segs[0])
	return v, tail[len(segs[0]):], err == nil
}
