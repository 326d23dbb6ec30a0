// Package httpapi is Llamatray's HTTP layer: the OpenAI, Anthropic and llama.cpp-native endpoints
// reverse-proxied to per-model llama-server children (over router/proxy), the management API shaped
// like llama.cpp's router, and the security checks (Host, CORS, API keys) in front of them; it
// mounts Ollama's API (router/ollama) and forwards to peers (router/peer). routes.go declares every
// route or the function that declares a group of them (the Hub's, the downloads', the peers',
// Ollama's).
package httpapi

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/activity"
	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/metrics"
	"github.com/llamatray/llamatray/router/peer"
	"github.com/llamatray/llamatray/router/proxy"
	"github.com/llamatray/llamatray/router/view"
	"github.com/llamatray/llamatray/router/wire"
)

// DefaultBodyLimit is the largest request body accepted when Options.BodyLimit is 0.
const DefaultBodyLimit int64 = 64 << 20

// Engine is what the HTTP layer needs from the engine; *engine.Engine satisfies it.
type Engine interface {
	// AcquireID blocks until the child of the model with catalog ID id (from Resolve) is ready
	// and returns a lease on it.
	AcquireID(ctx context.Context, id string) (*engine.Lease, error)
	// Resolve maps an ID or alias to the canonical catalog ID.
	Resolve(name string) (string, error)
	// Load starts the model if needed and waits until it is ready or failed.
	Load(ctx context.Context, name string) error
	// StartLoad starts loading without waiting.
	StartLoad(name string) error
	// Unload drains the model (or stops it at once with force) and waits until it stopped.
	Unload(ctx context.Context, name string, force bool) error
	SetPinned(name string, pinned bool) error
	// KeepAlive sets how long the model stays loaded once idle (Ollama's keep_alive); nil: as configured.
	KeepAlive(name string, d *time.Duration) error
	Models() []engine.ModelStatus
	Model(name string) (engine.ModelStatus, error)
	Budget() engine.Budget
	// Subscribe returns a channel of engine events and a function that ends the subscription.
	Subscribe() (<-chan engine.Event, func())
	// SubscribeTo is Subscribe for the events of these kinds only (the metrics' feed).
	SubscribeTo(kinds ...engine.EventKind) (<-chan engine.Event, func())
	// Logs returns the tail of a model's child output.
	Logs(name string) []string
}

var _ Engine = (*engine.Engine)(nil)

// Catalog gives the metadata of a model by canonical ID.
type Catalog interface {
	Lookup(name string) (catalog.Model, bool)
	// Has reports whether Lookup finds name, without copying its model.
	Has(name string) bool
}

// Options configure a Server.
type Options struct {
	Engine  Engine
	Catalog Catalog
	// Views is the one view of the models (the service's, see router/view) that /models shows;
	// nil → joined from Engine and Catalog by view.Builder.
	Views view.Source
	// Pin pins or unpins a model by ID for POST /models/pin: the service's, which also saves the
	// choice in the configuration file; nil → Engine.SetPinned, which lasts the run.
	Pin func(id string, pinned bool) error
	// Alias gives a model one more name, or takes one away, saved in the configuration and resolving
	// before it returns (Ollama's /api/copy and /api/delete of a copy); nil → /api/copy answers 501.
	Alias func(id, alias string, add bool) error
	// Listen is the bound address, for Host checks and /api/status.
	Listen string
	// DefaultModel is used when a request names no model.
	DefaultModel string
	// NoModelsAutoload (models_autoload = false): a request for a model that is not running gets 400
	// "model is not loaded" unless it asks ?autoload=true, as llama.cpp's router with
	// --no-models-autoload; POST /models/load still loads.
	NoModelsAutoload bool
	// BodyLimit bounds request bodies; 0 means DefaultBodyLimit. Larger bodies get 413.
	BodyLimit int64
	// BodyTimeout is how long a request body may take to arrive, from the request's start (408
	// after it); 0 means DefaultBodyTimeout, negative none. It never bounds the answer.
	BodyTimeout time.Duration
	// APIKeys, when not empty, are required as "Authorization: Bearer K" or "x-api-key: K".
	// The service must refuse to bind a non-loopback address without keys (see RequiresKey).
	APIKeys []string
	// AllowedHosts are extra Host names accepted besides loopback ones; "*" accepts any Host.
	AllowedHosts []string
	// CORSOrigins are extra allowed origins besides http(s) loopback ones; "*" allows any origin.
	CORSOrigins []string
	// StreamLoadingProgress sends SSE comments to streaming requests while their model loads.
	StreamLoadingProgress bool
	Version               string
	StartTime             time.Time
	// Setup supplies the service's part of /api/status (llama-server, config file, model folders).
	Setup func() wire.Setup
	// LlamaServers installs llama-server builds (/api/llama-server/...); nil answers 404 there.
	LlamaServers LlamaServers
	Logger       *slog.Logger
	// Reload scans the model folders again (GET /models?reload=1); nil: the list is answered as is.
	Reload func(ctx context.Context) error
	// Hub, when set, enables models from the Hugging Face Hub (see HubOptions).
	Hub *HubOptions
	// Activity records every model-routed request (GET /api/activity); it outlives the Server
	// when the service replaces the router. nil → the Server keeps its own.
	Activity *activity.Recorder
	// Metrics is what GET /metrics (no model) exposes; requests are counted into it. nil → the
	// Server keeps its own, fed from Engine's events until Close. One given here is not watched by
	// the Server: its owner calls its Watch, so it can outlive the Server.
	Metrics *metrics.Metrics
	// Rules are the models' request rules (rules.go), applied to the bodies proxied to them.
	Rules RuleSet
	// Peers are other machines' servers (peers.go): their models are listed, and requests no local
	// model takes go to them; nil: none. AddPeer and RemovePeer change them in the configuration
	// (POST and DELETE /api/peers); nil: those answer 404.
	Peers      *peer.Set
	AddPeer    func(wire.PeerAdd) error
	RemovePeer func(name string) error
	// Discovered is what mDNS found of other Llamatrays (GET /api/peers/discovered); nil: 404.
	Discovered func() wire.DiscoveredList
}

// Server is the HTTP handler of a Llamatray instance.
type Server struct {
	o        Options
	log      *slog.Logger
	limit    int64
	bodyWait time.Duration // bounds the arrival of a request body (bodyDeadline); <= 0: no bound
	keys     [][]byte
	children *proxy.Transport // connections to the children
	handler  http.Handler
	views    view.Source
	metrics  *metrics.Metrics
	unwatch  func() // ends the metrics' event subscription (the Server's own metrics); nil when none

	loadingAfter time.Duration // how long a streaming request waits before loading comments start
	loadingEvery time.Duration // interval of loading comments
	keepAlive    time.Duration // interval of /models/events keep-alive comments
	coalesce     time.Duration // /models/events window per model

	instance string        // this Server's marker in the requests it sends to peers (peer.Marker)
	flight   peer.Flight   // requests in flight to peers
	peerPoke time.Duration // a request to a peer silent this long reads its list again (0: peer.Poke)
}

// New builds a Server. It does not validate the listen address against the keys: that is the
// service's job (RequiresKey).
func New(o Options) *Server {
	srv := &Server{
		o:            o,
		log:          cmp.Or(o.Logger, slog.New(slog.NewTextHandler(io.Discard, nil))),
		limit:        cmp.Or(max(o.BodyLimit, 0), DefaultBodyLimit),
		bodyWait:     cmp.Or(o.BodyTimeout, DefaultBodyTimeout),
		loadingAfter: time.Second,
		loadingEvery: 2 * time.Second,
		keepAlive:    15 * time.Second,
		coalesce:     100 * time.Millisecond,
		instance:     peer.NewInstance(),
	}
	if srv.o.StartTime.IsZero() {
		srv.o.StartTime = time.Now()
	}
	for _, k := range o.APIKeys {
		if k != "" {
			srv.keys = append(srv.keys, []byte(k))
		}
	}
	if srv.o.Activity == nil {
		srv.o.Activity = activity.New(0, 0)
	}
	srv.views = o.Views
	if srv.views == nil {
		srv.views = view.Builder{Engine: o.Engine, Catalog: o.Catalog}
	}
	srv.metrics = o.Metrics
	if srv.metrics == nil {
		srv.metrics = metrics.New(o.Engine)
		if o.Engine != nil {
			srv.unwatch = srv.metrics.Watch(o.Engine)
		}
	}
	srv.children = proxy.NewTransport(dest)
	srv.handler = srv.accessLog(srv.bodyDeadline(srv.checkHost(srv.cors(srv.auth(srv.fastRoutes(srv.routes()))))))
	return srv
}

func (srv *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	srv.handler.ServeHTTP(w, r)
}

// Close drops idle upstream connections and ends the metrics' event subscription. In-flight
// requests are not affected.
func (srv *Server) Close() {
	srv.children.CloseIdleConnections()
	if srv.unwatch != nil {
		srv.unwatch()
	}
}

// DropIdle closes the idle connections to model id's children: its child is about to stop, and
// llama-server waits for open connections before it exits.
func (srv *Server) DropIdle(id string) { srv.children.CloseIdle(id) }

// RequiresKey reports whether binding listen exposes the router beyond this machine, so that an API
// key must be configured: anything but a loopback name or address (":8080" and "0.0.0.0:8080" bind
// every interface).
func RequiresKey(listen string) bool {
	return !isLoopbackHost(hostOf(listen))
}

// isLoopbackHost reports whether host (no port; brackets allowed) is localhost or a loopback address.
func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" {
		return true
	}
	if i := strings.IndexByte(host, '%'); i >= 0 { // zone, as in fe80::1%eth0
		host = host[:i]
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
