package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/child"
	"github.com/llamatray/llamatray/router/mem"
)

// fakeFX are effects a test drives by hand: spawns are recorded and registered at once, children
// report only what the test makes them report, and time moves only by advance, which fires the due
// timers in order on the test's goroutine. Together with calling request and sample directly, this
// runs the scheduler synchronously: every decision has been made and acted on when a call returns.
type fakeFX struct {
	mu       sync.Mutex // guards every field below
	now      time.Time
	timers   []*fakeTimer
	procs    []*fakeProc // in spawn order
	autoExit bool        // a stopped child exits at once (set for Close in cleanup)
	spawnErr error       // the next Spawn fails with this
}

type fakeTimer struct {
	fx      *fakeFX
	at      time.Time
	d       time.Duration
	f       func()
	stopped bool // guarded by fx.mu
	fired   bool // guarded by fx.mu
}

func (t *fakeTimer) Stop() bool {
	t.fx.mu.Lock()
	defer t.fx.mu.Unlock()
	was := !t.stopped && !t.fired
	t.stopped = true
	return was
}

func newFakeFX() *fakeFX { return &fakeFX{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (fx *fakeFX) Now() time.Time {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return fx.now
}

func (fx *fakeFX) AfterFunc(d time.Duration, f func()) Timer {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	t := &fakeTimer{fx: fx, at: fx.now.Add(d), d: d, f: f}
	fx.timers = append(fx.timers, t)
	return t
}

// Go runs f at once, on the caller's goroutine, so a test stays synchronous.
func (fx *fakeFX) Go(f func()) { f() }

// Every never ticks: tests sample memory by calling Engine.sample themselves.
func (fx *fakeFX) Every(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }

func (fx *fakeFX) Spawn(spec child.Spec, onEvent func(child.Event), started func(Proc, error)) {
	fx.mu.Lock()
	if err := fx.spawnErr; err != nil {
		fx.spawnErr = nil
		fx.mu.Unlock()
		started(nil, fmt.Errorf("child %q: %w: %w", spec.Model, child.ErrStart, err))
		return
	}
	p := &fakeProc{fx: fx, spec: spec, on: onEvent, pid: 1000 + len(fx.procs), done: make(chan struct{})}
	fx.procs = append(fx.procs, p)
	fx.mu.Unlock()
	started(p, nil)
}

// advance moves the clock by d, firing every timer that falls due, earliest first, each with the
// clock at its time.
func (fx *fakeFX) advance(d time.Duration) {
	fx.mu.Lock()
	target := fx.now.Add(d)
	fx.mu.Unlock()
	for {
		fx.mu.Lock()
		var next *fakeTimer
		for _, t := range fx.timers {
			if !t.fired && !t.stopped && !t.at.After(target) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		if next == nil {
			fx.now = target
			fx.mu.Unlock()
			return
		}
		next.fired = true
		if next.at.After(fx.now) {
			fx.now = next.at
		}
		fx.mu.Unlock()
		next.f()
	}
}

// spawned lists the model of every child spawned so far, in order.
func (fx *fakeFX) spawned() []string {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	var out []string
	for _, p := range fx.procs {
		out = append(out, p.spec.Model)
	}
	return out
}

// proc is the latest child of model id.
func (fx *fakeFX) proc(t testing.TB, id string) *fakeProc {
	t.Helper()
	fx.mu.Lock()
	defer fx.mu.Unlock()
	for i := len(fx.procs) - 1; i >= 0; i-- {
		if fx.procs[i].spec.Model == id {
			return fx.procs[i]
		}
	}
	t.Fatalf("no child of %s was spawned", id)
	return nil
}

// fakeProc is one fake child. Its events are delivered by the test, on the test's goroutine.
type fakeProc struct {
	fx   *fakeFX
	spec child.Spec
	on   func(child.Event)
	pid  int
	done chan struct{}

	mu     sync.Mutex // guards stops and exited
	stops  []bool     // the force flag of each Stop call
	exited bool
}

func (p *fakeProc) PID() int              { return p.pid }
func (p *fakeProc) Done() <-chan struct{} { return p.done }
func (p *fakeProc) Logs() []string        { return []string{"fake output of " + p.spec.Model} }

func (p *fakeProc) Stop(force bool) {
	p.mu.Lock()
	p.stops = append(p.stops, force)
	p.mu.Unlock()
	p.fx.mu.Lock()
	auto := p.fx.autoExit
	p.fx.mu.Unlock()
	if auto {
		p.exitStopped()
	}
}

// stopped reports whether the engine asked this child to stop.
func (p *fakeProc) stopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.stops) > 0
}

func (p *fakeProc) ready() {
	p.on(child.Event{Kind: child.Ready, PID: p.pid, Addr: child.Addr{Port: p.pid}})
}

// readyWith makes the child ready with its own report of its buffers per device (as llama-server's
// buffer lines give them).
func (p *fakeProc) readyWith(buffers map[string]int64) {
	p.on(child.Event{Kind: child.Ready, PID: p.pid, Addr: child.Addr{Port: p.pid}, Buffers: buffers})
}
func (p *fakeProc) sleep() {
	p.on(child.Event{Kind: child.Sleeping, PID: p.pid, Addr: child.Addr{Port: p.pid}})
}
func (p *fakeProc) woke() {
	p.on(child.Event{Kind: child.Woke, PID: p.pid, Addr: child.Addr{Port: p.pid}})
}

// exitStopped ends a child the engine stopped.
func (p *fakeProc) exitStopped() {
	p.exit(child.Event{Kind: child.Exited, PID: p.pid, Addr: child.Addr{Port: p.pid}, Deliberate: true})
}

// crash ends the child unexpectedly.
func (p *fakeProc) crash() {
	p.exit(child.Event{Kind: child.Exited, PID: p.pid, Addr: child.Addr{Port: p.pid}, ExitCode: 134,
		Err: fmt.Errorf("child %q: %w (exit code 134)", p.spec.Model, child.ErrCrashed), LogTail: []string{"GGML_ASSERT failed"}})
}

func (p *fakeProc) exit(ev child.Event) {
	p.mu.Lock()
	if p.exited {
		p.mu.Unlock()
		return
	}
	p.exited = true
	p.mu.Unlock()
	p.on(ev)
	close(p.done)
}

// fakeProbe reports fixed system memory and per-PID RSS and VRAM that a test sets.
type fakeProbe struct {
	mu   sync.Mutex // guards every field below
	sys  mem.System
	rss  map[int]int64
	vram map[int]int64
}

func (p *fakeProbe) System(context.Context) (mem.System, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sys, nil
}

func (p *fakeProbe) ProcessRSS(_ context.Context, pid int) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.rss[pid]; ok {
		return v, nil
	}
	return 0, errors.New("no such process")
}

func (p *fakeProbe) ProcessVRAM(context.Context) (map[int]int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int]int64{}
	for k, v := range p.vram {
		out[k] = v
	}
	return out, nil
}

func (p *fakeProbe) set(f func(p *fakeProbe)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// syncModel is one catalog model of a synchronous test: its estimate and settings.
type syncModel struct {
	id       string
	ramMiB   int64
	vramMiB  int64
	layers   int // layers offloaded, as the catalog's estimate says
	settings Settings
}

// syncEngine is one synchronous scheduler test: an engine over fake effects and a fake probe, never
// Started (no background loops), closed in cleanup.
type syncEngine struct {
	t     testing.TB
	fx    *fakeFX
	probe *fakeProbe
	e     *Engine
}

func newSync(t testing.TB, tune func(*Options), models ...syncModel) *syncEngine {
	t.Helper()
	s := &syncEngine{t: t, fx: newFakeFX(), probe: &fakeProbe{sys: mem.System{Total: 64 << 30, Available: 32 << 30}, rss: map[int]int64{}, vram: map[int]int64{}}}
	cat := &memCatalog{}
	set := map[string]Settings{}
	for _, m := range models {
		path := filepath.Join("/models", m.id+".gguf")
		cat.models = append(cat.models, catalog.Model{ID: m.id, Path: path, Files: []string{path}, Architecture: "llama", SizeBytes: 9,
			Estimate: catalog.Estimate{RAM: m.ramMiB * mib, VRAM: m.vramMiB * mib, GPULayers: m.layers, ContextSize: 512}})
		set[m.id] = m.settings
	}
	o := Options{
		Catalog:  cat,
		Settings: func(id string) Settings { return set[id] },
		Limits: Limits{Binary: "/usr/bin/llama-server", MemoryLimit: 150 * mib, QueueTimeout: 10 * time.Second,
			FairWait: 3 * time.Second, LoadTimeout: time.Minute},
		Memory:  s.probe,
		Effects: s.fx,
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if tune != nil {
		tune(&o)
	}
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	s.e = e
	t.Cleanup(func() {
		s.fx.mu.Lock()
		s.fx.autoExit = true
		procs := append([]*fakeProc(nil), s.fx.procs...)
		s.fx.mu.Unlock()
		for _, p := range procs {
			if p.stopped() {
				p.exitStopped()
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// request asks for a lease on id, as Acquire does, without waiting for the answer.
func (s *syncEngine) request(id string) *waiter { return s.e.request(id) }

// answer is w's answer, which the test expects to have arrived.
func (s *syncEngine) answer(w *waiter) result {
	s.t.Helper()
	select {
	case r := <-w.ch:
		w.ch <- r // keep it for a later look
		return r
	default:
		s.t.Fatalf("request for %s has no answer yet", w.model)
		return result{}
	}
}

// lease is w's lease, which the test expects to have been granted.
func (s *syncEngine) lease(w *waiter) *Lease {
	s.t.Helper()
	l, err := s.e.finish(w, s.answer(w))
	if err != nil || l == nil {
		s.t.Fatalf("request for %s: %v, want a lease", w.model, err)
	}
	return l
}

// pending asserts w has no answer yet.
func (s *syncEngine) pending(w *waiter) {
	s.t.Helper()
	select {
	case r := <-w.ch:
		s.t.Fatalf("request for %s answered (%v, %v), want it still queued", w.model, r.lease, r.err)
	default:
	}
}

func (s *syncEngine) state(id string) ModelStatus {
	s.t.Helper()
	st, err := s.e.Model(id)
	if err != nil {
		s.t.Fatal(err)
	}
	return st
}

// load brings id to loaded: a request, its child's spawn and ready, and the lease given back.
func (s *syncEngine) load(id string) *fakeProc {
	s.t.Helper()
	w := s.request(id)
	p := s.fx.proc(s.t, id)
	p.ready()
	s.lease(w).Release()
	if st := s.state(id); st.State != StateLoaded {
		s.t.Fatalf("%s is %s after its load", id, st.State)
	}
	return p
}

// asleepBesideBusy loads sleeper and puts it to sleep holding sleepMiB, then loads busy holding
// busyMiB under a lease the test gives back: the start of the tests of a wake queued behind a load.
func (s *syncEngine) asleepBesideBusy(sleeper string, sleepMiB int64, busy string, busyMiB int64) (ps, pb *fakeProc, lb *Lease) {
	s.t.Helper()
	ps = s.load(sleeper)
	ps.sleep()
	s.holds(ps, sleepMiB)
	pb = s.load(busy)
	lb = s.lease(s.request(busy))
	s.holds(pb, busyMiB)
	return ps, pb, lb
}
