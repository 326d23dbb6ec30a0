// Package service starts config → catalog → engine → HTTP listener as one unit, for `llamatray serve`
// and for the desktop app.
package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llamatray/llamatray/router/activity"
	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/discover"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/envconfig"
	"github.com/llamatray/llamatray/router/front"
	"github.com/llamatray/llamatray/router/httpapi"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/metrics"
	"github.com/llamatray/llamatray/router/peer"
	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/view"
	"github.com/llamatray/llamatray/router/wire"
	"github.com/llamatray/llamatray/router/worker"
)

// Options are what the caller knows beyond the configuration.
type Options struct {
	ConfigPath string
	Version    string
	Logger     *slog.Logger
	Memory     mem.Probe // nil → the machine
	Env        []string  // extra environment for llama-server children
	// IdleTimeout closes a client's keep-alive connection idle that long; 0 → $LLAMATRAY_IDLE_TIMEOUT,
	// else DefaultIdleTimeout.
	IdleTimeout time.Duration
	// BodyTimeout is how long a request body may take to arrive (httpapi.Options.BodyTimeout);
	// 0 → $LLAMATRAY_BODY_TIMEOUT, else httpapi.DefaultBodyTimeout.
	BodyTimeout time.Duration
	// OllamaAddr is where ollama_port listens; "" → OllamaAddr (Ollama's own default).
	OllamaAddr string
}

// DefaultIdleTimeout is how long a client's idle keep-alive connection stays open.
const DefaultIdleTimeout = 2 * time.Minute

// readHeaderTimeout is how long a client may take to send a request's headers.
const readHeaderTimeout = 30 * time.Second

// LlamaServer says which llama-server binary is used.
type LlamaServer struct {
	Path    string // "" when none was found
	Source  string // where it was found: config, env, beside, PATH, ...
	Version string
	Hint    string // how to install one on this OS
	Err     string // why none is used
	Build   string // the installed llama.cpp build ("b7100") when Source is "installed"

	FitTarget bool // it takes --fit-target: children are given their device share
}

// Service is a running Llamatray: catalog, engine and HTTP listener.
type Service struct {
	o       Options
	log     *slog.Logger
	cat     *catalog.Catalog
	eng     *engine.Engine
	handler atomic.Pointer[httpapi.Server]
	views   view.Builder
	hub     *hub.Manager
	started time.Time
	gpu     bool
	// installer installs llama.cpp release builds (router/releases)
	installer *releases.Installer
	// activity is every model's last hour of requests; it outlives the routers Edit replaces
	activity *activity.Recorder
	// metrics are GET /metrics' counters, fed by every router and by the engine's events; they too
	// outlive the routers, so a settings change resets no counter. Set in New, before any goroutine.
	metrics     *metrics.Metrics
	stopMetrics func()
	flags       sync.Map       // llama-server flags ([]string) by binary path, read once (flags.go)
	releases    releaseCheck   // the daily check of Llamatray's own releases (update.go)
	installs    installs       // the llama-server install, as a download (downloads.go)
	workers     *worker.Links  // the links to [workers.NAME]; opened by Start, kept in step by apply
	lend        *worker.Lender // this machine lent to other Llamatrays; started by Start

	// file is the configuration's one writer (config.Writer): its lock serializes the changes of
	// the configuration file, so that a later change is never overwritten by an earlier one. It is
	// held across I/O (the save, and Edit's rescan, exec of llama-server and listener restart); only
	// mu is taken under it, briefly.
	file      config.Writer
	presetErr string     // the last preset file error logged (presets.go); set only within the writer's Edit, under its lock
	mu        sync.Mutex // guards cfg, llama, srv, addr, listenErr, cancel and ollama
	cfg       config.Config
	llama     LlamaServer
	srv       *front.Server
	addr      string
	listenErr error
	cancel    context.CancelFunc
	ollama    ollamaPort           // the listener on Ollama's port, when ollama_port is on (ollama.go)
	peers     *peer.Set            // other machines' servers (peers.go); set in newService, read from Start on
	disc      *discover.Discoverer // other Llamatrays on the local network (discover.go); set in newService
	discDone  chan struct{}        // closed when disc.Run returns; set by Start, read by Stop
}

// ErrNeedsKey is returned when the listen address is not loopback and no API key is configured.
var ErrNeedsKey = errors.New("listening beyond this machine requires api_keys in the configuration")

// New builds the service from a validated configuration. Nothing listens until Start.
func New(cfg config.Config, o Options) (*Service, error) {
	s, err := newService(cfg, o)
	if err != nil {
		return nil, err
	}
	s.llama = s.findLlamaServer(cfg.LlamaServer)
	if s.cfg, err = s.withPresets(context.Background(), s.cfg); err != nil { // its keys checked against llama-server's flags
		return nil, err
	}
	s.detectGPU() // now with llama-server's own devices (a Vulkan device no driver probe sees)
	if err := s.newEngine(); err != nil {
		return nil, err
	}
	return s, nil
}

// Inspect returns the models as a service started with cfg would show them — built by the same
// code, with the same estimates and learned footprints — without starting anything: the folders
// are scanned once, no llama-server is looked for or started, and nothing listens. It also returns
// the catalog's warnings (files skipped). `llamatray models` uses it when no instance runs.
func Inspect(ctx context.Context, cfg config.Config, o Options) ([]view.Model, []string, error) {
	s, err := newService(cfg, o)
	if err != nil {
		return nil, nil, err
	}
	if err := s.cat.Scan(ctx); err != nil {
		return nil, nil, fmt.Errorf("scanning models: %w", err)
	}
	if err := s.newEngine(); err != nil { // the engine takes the scanned catalog as it starts
		return nil, nil, err
	}
	defer s.eng.Close(ctx)
	return s.Models(), s.cat.Warnings(), nil
}

// newService builds the catalog; newEngine adds the engine and the HTTP handler.
func newService(cfg config.Config, o Options) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	cfg, err := config.ReadPresetsOf(cfg) // the catalog scans the files of its sections
	if err != nil {
		return nil, err
	}
	o.Logger = cmp.Or(o.Logger, slog.Default())
	if o.Memory == nil {
		o.Memory = mem.Machine()
	}
	o.IdleTimeout = timeoutOf(o.IdleTimeout, envconfig.IdleTimeout, DefaultIdleTimeout, o.Logger)
	o.BodyTimeout = timeoutOf(o.BodyTimeout, envconfig.BodyTimeout, httpapi.DefaultBodyTimeout, o.Logger)
	s := &Service{o: o, log: o.Logger, cfg: cfg, started: time.Now(), activity: activity.New(0, 0)}
	s.file.Path = o.ConfigPath
	s.loadActivity()
	// GPUs are named after llama-server's devices, and devices only it sees are added.
	s.o.Memory = mem.Named(o.Memory, func() string { return s.LlamaServer().Path })
	s.detectGPU()
	s.cat = catalog.New(catalog.Options{
		Dirs:    cfg.ModelDirsResolved(),
		Params:  s.estimateParams,
		Aliases: func(id string) []string { return s.config().ModelSettings(id).Aliases },
		Hidden:  func(id string) bool { return s.config().ModelSettings(id).Hidden },
		Variants: func() map[string][]string {
			return variantsOf(s.config())
		},
		Renamed: s.renamed,
		Logger:  o.Logger,
	})
	s.installer = s.newInstaller()
	s.peers = peer.New(peer.Options{Logger: o.Logger})
	s.disc = s.newDiscoverer()
	s.lend = worker.NewLender(o.Logger, stateDir(), o.Version, func() string { return s.LlamaServer().Path })
	s.workers = worker.NewLinks(o.Logger, func() string { return s.LlamaServer().Path }, func(name string, err error) {
		if eng := s.Engine(); eng != nil {
			eng.WorkerLost(name, err)
		}
	})
	return s, nil
}

func (s *Service) newEngine() error {
	cfg := s.config()
	eng, err := engine.New(engine.Options{
		Limits:     limits(cfg, s.LlamaServer()),
		Catalog:    s.cat,
		Settings:   s.settings,
		RouterPort: portOf(cfg.Listen),
		Env:        s.o.Env,
		StateDir:   stateDir(),
		Memory:     s.o.Memory,
		Workers:    s.workers,
		OnStop: func(id string) {
			if h := s.handler.Load(); h != nil {
				h.DropIdle(id)
			}
		},
		Logger: s.o.Logger,
	})
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	s.eng = eng
	s.metrics = metrics.New(eng)
	s.stopMetrics = s.metrics.Watch(eng)
	s.views = view.Builder{Engine: eng, Catalog: s.cat,
		CtxSize: func(id string) int { return s.config().ModelSettings(id).CtxSize },
		Tags:    func(id string) []string { return s.config().ModelSettings(id).Tags }}
	s.hub = s.newHub()
	s.rememberPulls()
	s.handler.Store(s.newRouter(cfg))
	return nil
}

// Models is the one view of every model (engine state, catalog entry, the estimate for the
// configured context), sorted by ID: what GET /models, the tray, the models window and
// `llamatray models` show.
func (s *Service) Models() []view.Model { return s.views.Models() }

// Model is the view of one model, by ID or alias.
func (s *Service) Model(name string) (view.Model, error) { return s.views.Model(name) }

func portOf(listen string) int {
	_, p, err := net.SplitHostPort(listen)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

func (s *Service) newRouter(cfg config.Config) *httpapi.Server {
	return httpapi.New(httpapi.Options{
		Engine:                s.eng,
		Catalog:               s.cat,
		Views:                 s,
		Pin:                   s.SetPinned,
		Alias:                 s.SetAlias,
		Listen:                cfg.Listen,
		DefaultModel:          cfg.DefaultModel,
		NoModelsAutoload:      !cfg.ModelsAutoload,
		BodyLimit:             int64(cfg.BodyLimit),
		BodyTimeout:           s.o.BodyTimeout,
		APIKeys:               cfg.APIKeys,
		AllowedHosts:          cfg.AllowedHosts,
		CORSOrigins:           cfg.CORSOrigins,
		StreamLoadingProgress: cfg.StreamLoadingProgress,
		Version:               s.o.Version,
		StartTime:             s.started,
		Setup:                 s.setup,
		LlamaServers:          s,
		Logger:                s.log,
		Reload:                s.reload,
		Hub:                   s.hubOptions(cfg.AutoPull),
		Activity:              s.activity,
		Metrics:               s.metrics,
		Rules:                 requestRules(cfg, s.log),
		Peers:                 s.peers,
		AddPeer:               s.AddPeer,
		RemovePeer:            s.RemovePeer,
		Discovered:            s.DiscoveredList,
	})
}

// setup is the service's part of /api/status.
func (s *Service) setup() wire.Setup {
	ls := s.LlamaServer()
	st := wire.Setup{
		LlamaServer:     wire.LlamaServer{Path: ls.Path, Source: ls.Source, Version: ls.Version, Build: ls.Build, Error: ls.Err, Hint: ls.Hint},
		ConfigPath:      s.o.ConfigPath,
		ModelDirs:       append([]string{}, s.config().ModelDirsResolved()...),
		CatalogWarnings: append([]string{}, s.cat.Warnings()...),
		Update:          s.Update(),
		Workers:         s.Workers(),
		Lending:         s.Lending(),
	}
	addr, err := s.OllamaListen()
	st.OllamaListen = addr
	if err != nil {
		st.OllamaError = err.Error()
	}
	return st
}

// ServeHTTP serves through the current router (replaced when settings change).
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.Load().ServeHTTP(w, r)
}

// Start scans the catalog, starts the engine and binds the listener. A bind failure (port in use) is
// returned, and also kept in ListenErr, but the engine stays up so the desktop app can show it.
func (s *Service) Start(ctx context.Context) error {
	if err := s.cat.Scan(ctx); err != nil {
		return fmt.Errorf("scanning models: %w", err)
	}
	for _, w := range s.cat.Warnings() {
		s.log.Warn("model skipped", "reason", w)
	}
	wctx, cancel := context.WithCancel(context.Background())
	s.discDone = make(chan struct{})
	go func() { defer close(s.discDone); s.disc.Run(wctx) }()
	s.mu.Lock()
	s.cancel = cancel
	s.mu.Unlock()
	go s.cat.Watch(wctx, 5*time.Second)
	go s.watchPresets(wctx)
	go s.updateDaily(wctx, firstUpdateCheck, updateEvery)
	go s.checkReleasesDaily(wctx, firstReleaseCheck, releaseCheckEvery)
	// The workers' devices are the budget's before the first load is planned (each open is bounded).
	<-s.workers.Sync(s.config().Workers)
	if err := s.eng.Start(ctx); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	s.syncPeers()
	s.lend.Sync(s.config(), false)
	err := s.listen(s.config().Listen)
	// Discovery started before the listener was bound: it reads the address again now, so that the
	// announcement goes out at once, not after its next look a minute later.
	s.disc.Poke()
	if err != nil {
		return err
	}
	s.syncOllamaPort()
	return nil
}

// listen binds addr and serves on it.
func (s *Service) listen(addr string) error {
	cfg := s.config()
	if httpapi.RequiresKey(addr) && len(cfg.APIKeys) == 0 {
		err := fmt.Errorf("%s: %w", addr, ErrNeedsKey)
		s.setListen(nil, addr, err)
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		err = fmt.Errorf("cannot listen on %s (is another Llamatray or server using the port? change `listen` in the config or pass --addr): %w", addr, err)
		s.setListen(nil, addr, err)
		return err
	}
	srv := s.newHTTPServer()
	s.setListen(srv, ln.Addr().String(), nil)
	s.log.Info("serving", "addr", ln.Addr().String())
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("server stopped", "err", err)
		}
	}()
	return nil
}

// newHTTPServer is the server of a listener (router/front, which hands what it does not serve
// itself to net/http). No read or write timeout past the head: it would bound long streamed answers
// and load waits. Bodies have their own deadline (httpapi's BodyTimeout); idle keep-alive
// connections close after IdleTimeout.
func (s *Service) newHTTPServer() *front.Server {
	return front.New(front.Options{Handler: s, ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: s.o.IdleTimeout,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn), Logger: s.log})
}

// timeoutOf is set when it is not zero, else the duration in the environment variable env, else def.
// A variable that is not a positive duration is reported and ignored.
func timeoutOf(set time.Duration, env envconfig.Var, def time.Duration, log *slog.Logger) time.Duration {
	if set != 0 {
		return set
	}
	v := env.Get()
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		log.Warn("ignored: not a positive duration such as 30s", "variable", env, "value", v, "default", def)
		return def
	}
	return d
}

func (s *Service) setListen(srv *front.Server, addr string, err error) {
	s.mu.Lock()
	s.srv, s.addr, s.listenErr = srv, addr, err
	s.mu.Unlock()
}

// Stop closes the listener, waits for in-flight requests (until ctx ends), then stops every child.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	srv, cancel, osrv := s.srv, s.cancel, s.ollama.srv
	s.srv, s.ollama = nil, ollamaPort{}
	s.mu.Unlock()
	if osrv != nil {
		osrv.Close()
	}
	if cancel != nil {
		cancel()
	}
	if srv != nil {
		sctx, c := context.WithTimeout(ctx, 10*time.Second)
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
		c()
	}
	s.handler.Load().Close()
	s.peers.Close()
	if s.discDone != nil {
		<-s.discDone // the announcement is withdrawn
	}
	s.hub.Close()
	err := s.eng.Close(ctx)
	s.workers.Close()
	s.lend.Close()
	s.stopMetrics()
	s.keepActivity()
	return err
}

// Engine returns the engine.
func (s *Service) Engine() *engine.Engine { return s.eng }

// Catalog returns the model catalog.
func (s *Service) Catalog() *catalog.Catalog { return s.cat }

// Config returns the configuration in force.
func (s *Service) Config() config.Config { return s.config() }

// Activity returns every model's last hour of requests (as GET /api/activity).
func (s *Service) Activity() wire.Activity { return s.activity.Snapshot() }

// ListenAddr is the address the router is bound to (or tried to bind).
func (s *Service) ListenAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// ListenErr is why the listener is not up, nil when it is.
func (s *Service) ListenErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listenErr
}

// LlamaServer says which llama-server is used, or how to get one.
func (s *Service) LlamaServer() LlamaServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.llama
}

// LogDir is where Llamatray writes its logs.
func (s *Service) LogDir() string {
	d, err := config.LogDir()
	if err != nil {
		return os.TempDir()
	}
	return d
}

// detectGPU notes whether models will run on a GPU, so that estimates count the layers offloaded.
// Called before anything runs concurrently.
func (s *Service) detectGPU() {
	if sys, err := s.o.Memory.System(context.Background()); err == nil {
		s.gpu = len(sys.GPUs) > 0 || sys.Unified
	}
}
