package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/child"
	"github.com/llamatray/llamatray/router/engine"
)

// fakeEngine implements Engine over a fixed set of models, each pointing at a test upstream.
type fakeEngine struct {
	// leases is a real engine whose children are the upstreams: it grants and counts the leases, so
	// that a test sees the engine's own Release (set once by newFakeEngine).
	leases *engine.Engine
	// granting is read-held by lease across each grant, so that released never counts a lease
	// granted and not yet held as one given back.
	granting sync.RWMutex
	granted  atomic.Int64 // leases granted so far

	mu       sync.Mutex // guards every field below
	models   map[string]*engine.ModelStatus
	aliases  map[string]string // alias → id
	upstream map[string]*url.URL
	sockets  map[string]string // id → unix socket of its upstream
	logs     map[string][]string
	calls    []string // management calls, e.g. "load m1", "unload m1 force"
	resolved []string // every name given to Resolve
	subs     []chan engine.Event
	budget   engine.Budget

	// acquire, when set, replaces the default Acquire behaviour (after name resolution).
	acquire func(ctx context.Context, id string) (*engine.Lease, error)
	// loadErr, when set, is returned by Load and StartLoad.
	loadErr error

	counted    int // releases waitReleased has waited for
	subscribed chan struct{}
}

func newFakeEngine() *fakeEngine {
	f := &fakeEngine{
		models:     map[string]*engine.ModelStatus{},
		aliases:    map[string]string{},
		upstream:   map[string]*url.URL{},
		sockets:    map[string]string{},
		logs:       map[string][]string{},
		subscribed: make(chan struct{}, 16),
		budget:     engine.Budget{Limit: 8 << 30, Used: 1 << 30, Free: 7 << 30, MaxLoaded: 2, Loaded: 1},
	}
	eng, err := engine.New(engine.Options{Catalog: leaseCatalog{f}, Limits: engine.Limits{Binary: "llama-server", MemoryLimit: 1 << 40},
		Effects: upstreamFX{f: f}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		panic(err)
	}
	f.leases = eng
	return f
}

// add registers a model served by upstream (nil → unreachable; "unix://PATH" → the socket PATH)
// with aliases.
func (f *fakeEngine) add(id string, upstream string, aliases ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.models[id] = &engine.ModelStatus{ID: id, Aliases: aliases, State: engine.StateLoaded}
	for _, a := range aliases {
		f.aliases[a] = id
	}
	if path, ok := strings.CutPrefix(upstream, "unix://"); ok {
		f.sockets[id] = path
		upstream = "http://" + filepath.Base(path)
	}
	if upstream != "" {
		u, err := url.Parse(upstream)
		if err != nil {
			panic(err)
		}
		f.upstream[id] = u
	}
}

func (f *fakeEngine) Resolve(name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resolved = append(f.resolved, name)
	if _, ok := f.models[name]; ok {
		return name, nil
	}
	if id, ok := f.aliases[name]; ok {
		return id, nil
	}
	var sug []string
	for id := range f.models {
		if strings.Contains(id, name) || strings.Contains(name, id) {
			sug = append(sug, id)
		}
	}
	slices.Sort(sug)
	return "", &engine.UnknownModelError{Name: name, Suggestions: sug}
}

func (f *fakeEngine) AcquireID(ctx context.Context, id string) (*engine.Lease, error) {
	if _, ok := f.models[id]; !ok {
		return nil, &engine.UnknownModelError{Name: id}
	}
	f.mu.Lock()
	hook := f.acquire
	f.mu.Unlock()
	if hook != nil {
		return hook(ctx, id)
	}
	return f.lease(id, 0), nil
}

// lease hands out a lease on id from the real engine, counted in its Active until released.
func (f *fakeEngine) lease(id string, waited time.Duration) *engine.Lease {
	f.mu.Lock()
	up := f.upstream[id]
	f.mu.Unlock()
	f.granting.RLock()
	f.granted.Add(1)
	l, err := f.leases.AcquireID(context.Background(), id)
	f.granting.RUnlock()
	if err != nil {
		panic(err)
	}
	l.Waited = waited
	if up == nil {
		l.URL = nil // an unreachable model
	}
	return l
}

// active is how many leases on id are held.
func (f *fakeEngine) active(id string) int { return f.held()[id] }

// held is how many leases on each model are held.
func (f *fakeEngine) held() map[string]int {
	n := map[string]int{}
	for _, m := range f.leases.Models() {
		n[m.ID] = m.Active
	}
	return n
}

// released is how many of the leases granted so far were given back.
func (f *fakeEngine) released() int {
	f.granting.Lock()
	defer f.granting.Unlock()
	n := int(f.granted.Load())
	for _, m := range f.leases.Models() {
		n -= m.Active
	}
	return n
}

// leaseCatalog is the fake's models as the real engine's catalog.
type leaseCatalog struct{ f *fakeEngine }

func (c leaseCatalog) Models() []catalog.Model {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	var out []catalog.Model
	for id := range c.f.models {
		out = append(out, catalog.Model{ID: id, SizeBytes: 1})
	}
	return out
}

func (c leaseCatalog) Lookup(name string) (catalog.Model, bool) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	_, ok := c.f.models[name]
	return catalog.Model{ID: name, SizeBytes: 1}, ok
}

func (leaseCatalog) Suggest(string, int) []string { return nil }

func (leaseCatalog) Subscribe() (<-chan struct{}, func()) { return nil, func() {} }

// upstreamFX starts each model's child as its upstream, ready at once; the rest is the real clock.
type upstreamFX struct {
	engine.ChildEffects
	f *fakeEngine
}

func (fx upstreamFX) Spawn(spec child.Spec, onEvent func(child.Event), started func(engine.Proc, error)) {
	fx.f.mu.Lock()
	addr := child.Addr{Socket: fx.f.sockets[spec.Model]}
	if u := fx.f.upstream[spec.Model]; u != nil && addr.Socket == "" {
		addr.Port, _ = strconv.Atoi(u.Port())
	}
	fx.f.mu.Unlock()
	p := &upstreamProc{on: onEvent, done: make(chan struct{})}
	started(p, nil)
	onEvent(child.Event{Kind: child.Ready, PID: 1, Addr: addr})
}

// upstreamProc is a child that is its upstream: stopping it only reports that it exited.
type upstreamProc struct {
	on   func(child.Event)
	once sync.Once
	done chan struct{}
}

func (p *upstreamProc) PID() int { return 1 }

func (p *upstreamProc) Stop(bool) {
	p.once.Do(func() {
		p.on(child.Event{Kind: child.Exited, PID: 1, Deliberate: true})
		close(p.done)
	})
}

func (p *upstreamProc) Done() <-chan struct{} { return p.done }

func (p *upstreamProc) Logs() []string { return nil }

func (f *fakeEngine) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeEngine) Load(ctx context.Context, name string) error {
	f.record("load " + name)
	return f.loadErr
}

func (f *fakeEngine) StartLoad(name string) error {
	f.record("startload " + name)
	return f.loadErr
}

func (f *fakeEngine) Unload(ctx context.Context, name string, force bool) error {
	if force {
		f.record("unload " + name + " force")
	} else {
		f.record("unload " + name)
	}
	return nil
}

func (f *fakeEngine) SetPinned(name string, pinned bool) error {
	if pinned {
		f.record("pin " + name)
	} else {
		f.record("unpin " + name)
	}
	return nil
}

func (f *fakeEngine) KeepAlive(name string, d *time.Duration) error {
	if d == nil {
		f.record("keepalive " + name + " default")
	} else {
		f.record(fmt.Sprintf("keepalive %s %s", name, *d))
	}
	return nil
}

// Models lists the models, each counting the leases held on it in Active.
func (f *fakeEngine) Models() []engine.ModelStatus {
	held := f.held()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []engine.ModelStatus
	for _, m := range f.models {
		st := *m
		st.Active += held[m.ID]
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b engine.ModelStatus) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (f *fakeEngine) Model(name string) (engine.ModelStatus, error) {
	id, err := f.Resolve(name)
	if err != nil {
		return engine.ModelStatus{}, err
	}
	n := f.active(id)
	f.mu.Lock()
	defer f.mu.Unlock()
	st := *f.models[id]
	st.Active += n
	return st, nil
}

func (f *fakeEngine) Budget() engine.Budget {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.budget
}

func (f *fakeEngine) Subscribe() (<-chan engine.Event, func()) {
	ch := make(chan engine.Event, 256)
	f.mu.Lock()
	f.subs = append(f.subs, ch)
	f.mu.Unlock()
	f.subscribed <- struct{}{}
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.subs = slices.DeleteFunc(f.subs, func(c chan engine.Event) bool { return c == ch })
	}
}

// SubscribeTo is Subscribe: the fake sends every kind (the engine's own tests check the filter).
func (f *fakeEngine) SubscribeTo(...engine.EventKind) (<-chan engine.Event, func()) {
	return f.Subscribe()
}

// publish sends ev to every subscriber.
func (f *fakeEngine) publish(ev engine.Event) {
	f.mu.Lock()
	subs := slices.Clone(f.subs)
	f.mu.Unlock()
	for _, ch := range subs {
		ch <- ev
	}
}

func (f *fakeEngine) Logs(name string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.logs[name]
}

// fakeCatalog implements Catalog.
type fakeCatalog map[string]catalog.Model

func (c fakeCatalog) Lookup(name string) (catalog.Model, bool) {
	m, ok := c[name]
	return m, ok
}

func (c fakeCatalog) Has(name string) bool { _, ok := c[name]; return ok }

// seen is one request as an upstream received it.
type seen struct {
	Method, Path, RawPath, Query string
	Body                         []byte
	Header                       http.Header
}

// recordingUpstream answers every request with a JSON echo and reports what it received.
func recordingUpstream(t testing.TB) (*httptest.Server, chan seen) {
	ch := make(chan seen, 1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ch <- seen{Method: r.Method, Path: r.URL.Path, RawPath: r.URL.RawPath, Query: r.URL.RawQuery, Body: body, Header: r.Header.Clone()}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(requestIDHeader, "upstream-own-id")
		_ = json.NewEncoder(w).Encode(map[string]any{"upstream": true, "path": r.URL.Path})
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

// testRouter starts the router on 127.0.0.1 with a fake engine holding model "m1" (alias "fast")
// served by upstream. tweaks adjust the router's timings before it serves.
func testRouter(t testing.TB, upstream string, tweak func(*Options), tweaks ...func(*Server)) (*httptest.Server, *fakeEngine, *Server) {
	fe := newFakeEngine()
	fe.add("m1", upstream, "fast")
	o := Options{
		Engine:  fe,
		Catalog: fakeCatalog{"m1": {ID: "m1", Path: "/models/m1.gguf", Architecture: "llama", Parameters: 7e9, Quantization: "Q4_K_M", SizeBytes: 4 << 30, ContextLength: 4096, ChatTemplate: true, Splits: 1, ModTime: time.Unix(1700000000, 0)}},
		Version: "test",
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if tweak != nil {
		tweak(&o)
	}
	server := New(o)
	if o.Engine == Engine(fe) && o.Metrics == nil {
		<-fe.subscribed // the Server's own metrics subscribed in New; tests wait for the next one
	}
	for _, f := range tweaks {
		f(server)
	}
	srv := httptest.NewServer(server)
	t.Cleanup(func() { srv.Close(); server.Close() })
	return srv, fe, server
}

// waitReleased waits until n more leases were released, or fails.
func waitReleased(t testing.TB, fe *fakeEngine, n int) {
	t.Helper()
	fe.mu.Lock()
	fe.counted += n
	want := fe.counted
	fe.mu.Unlock()
	events, stop := fe.leases.SubscribeTo(engine.EventLease)
	defer stop()
	timeout := time.After(10 * time.Second)
	for fe.released() < want {
		select {
		case <-events:
		case <-timeout:
			t.Fatalf("only %d of %d leases released", fe.released()-want+n, n)
		}
	}
}

// decodeError reads an OpenAI-shaped error response.
func decodeError(t testing.TB, resp *http.Response) (typ, code, msg string) {
	t.Helper()
	var doc struct {
		Error struct{ Message, Type, Code string }
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("error body %q: %v", b, err)
	}
	return doc.Error.Type, doc.Error.Code, doc.Error.Message
}
