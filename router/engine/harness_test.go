package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/testbed"
)

const mib = int64(1) << 20

// big makes a fake really hold ~100 MiB, like its 100 MiB estimate, so that a 150 MiB budget has
// room for exactly one such model whether the engine counts the estimate or the measurement.
var big = map[string]any{"hold_mb": 100}

// memCatalog is an in-memory catalog of fake model files.
type memCatalog struct {
	mu     sync.Mutex // guards models and subs
	models []catalog.Model
	subs   []chan struct{}
}

func (c *memCatalog) Models() []catalog.Model {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]catalog.Model(nil), c.models...)
}

func (c *memCatalog) Lookup(name string) (catalog.Model, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.models {
		if m.ID == name {
			return m, true
		}
		for _, a := range m.Aliases {
			if a == name {
				return m, true
			}
		}
	}
	return catalog.Model{}, false
}

func (c *memCatalog) Suggest(name string, n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.models {
		if len(out) < n && (strings.Contains(m.ID, name) || strings.Contains(name, m.ID)) {
			out = append(out, m.ID)
		}
	}
	return out
}

func (c *memCatalog) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	c.subs = append(c.subs, ch)
	c.mu.Unlock()
	return ch, func() {}
}

// probe reports a configurable amount of available RAM and real process RSS.
type probe struct {
	avail atomic.Int64
	real  mem.Probe
}

func (p *probe) System(ctx context.Context) (mem.System, error) {
	return mem.System{Total: 64 << 30, Available: p.avail.Load()}, nil
}
func (p *probe) ProcessRSS(ctx context.Context, pid int) (int64, error) {
	return p.real.ProcessRSS(ctx, pid)
}
func (p *probe) ProcessVRAM(ctx context.Context) (map[int]int64, error) { return nil, nil }

// fakeModel describes one model file for the fake llama-server.
type fakeModel struct {
	id     string
	estMiB int64
	knobs  map[string]any
	pinned bool
	alias  string
}

type harness struct {
	t     *testing.T
	dir   string
	cat   *memCatalog
	probe *probe
	e     *Engine

	mu     sync.Mutex // guards events
	events []Event
}

func newHarness(t *testing.T, tune func(*Options), models ...fakeModel) *harness {
	t.Helper()
	bin := testbed.FakeLlamaServer(t)
	h := &harness{t: t, dir: t.TempDir(), cat: &memCatalog{}, probe: &probe{real: mem.Machine()}}
	h.probe.avail.Store(32 << 30)
	pinned := map[string]bool{}
	for _, fm := range models {
		path := filepath.Join(h.dir, fm.id+".gguf")
		if err := os.WriteFile(path, []byte("GGUF fake"), 0o644); err != nil {
			t.Fatal(err)
		}
		k := map[string]any{"record": h.recordOf(fm.id)}
		for key, v := range fm.knobs {
			k[key] = v
		}
		b, _ := json.Marshal(k)
		if err := os.WriteFile(path+".fake.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
		cm := catalog.Model{ID: fm.id, Path: path, Files: []string{path}, Architecture: "llama", SizeBytes: 9,
			Estimate: catalog.Estimate{RAM: fm.estMiB * mib, ContextSize: 512}}
		if fm.alias != "" {
			cm.Aliases = []string{fm.alias}
		}
		h.cat.models = append(h.cat.models, cm)
		pinned[fm.id] = fm.pinned
	}
	o := Options{
		Catalog:  h.cat,
		Settings: func(id string) Settings { return Settings{CtxSize: 512, Pinned: pinned[id]} },
		Limits: Limits{Binary: bin, MemoryLimit: 4 << 30, QueueTimeout: 10 * time.Second, FairWait: 30 * time.Second,
			LoadTimeout: 20 * time.Second, StopTimeout: 2 * time.Second},
		StateDir:      filepath.Join(h.dir, "state"),
		Memory:        h.probe,
		PressureEvery: 100 * time.Millisecond,
		Logger:        slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if tune != nil {
		tune(&o)
	}
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h.e = e
	ch, cancel := e.Subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range ch {
			h.mu.Lock()
			h.events = append(h.events, ev)
			h.mu.Unlock()
		}
	}()
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, c := context.WithTimeout(context.Background(), 15*time.Second)
		defer c()
		if err := e.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		cancel()
		<-done
		h.checkNoStoppingWithLease()
	})
	return h
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// checkNoStoppingWithLease asserts the invariant over the whole event stream: a model never enters
// stopping while it holds a lease, unless the test forced it.
func (h *harness) checkNoStoppingWithLease() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range h.events {
		if ev.Kind == "state" && ev.State == StateStopping && ev.Active > 0 && ev.Cause != CauseForced && ev.Cause != CauseShutdown {
			h.t.Errorf("model %s went stopping with %d active leases (%s)", ev.Model, ev.Active, ev.Message)
		}
	}
}

// waitState waits until the model is in one of the states.
func (h *harness) waitState(id string, timeout time.Duration, states ...State) ModelStatus {
	h.t.Helper()
	var st ModelStatus
	testbed.WaitFor(h.t, timeout, fmt.Sprintf("model %s to reach %v", id, states), func() bool {
		s, err := h.e.Model(id)
		if err != nil {
			return false
		}
		st = s
		for _, want := range states {
			if s.State == want {
				return true
			}
		}
		return false
	})
	return st
}

// acquireAsync starts an Acquire in the background.
func (h *harness) acquireAsync(ctx context.Context, id string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		l, err := h.e.Acquire(ctx, id)
		ch <- result{lease: l, err: err}
	}()
	return ch
}

func (h *harness) recordOf(id string) string { return filepath.Join(h.dir, id+".record.jsonl") }

// countRecord counts the events of one kind that a model's fake processes recorded.
func (h *harness) countRecord(event, id string) int {
	n := 0
	for _, ev := range testbed.ReadRecord(h.t, h.recordOf(id)) {
		if ev.Event == event {
			n++
		}
	}
	return n
}

func (h *harness) eventsFor(id string) []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Event
	for _, ev := range h.events {
		if ev.Model == id {
			out = append(out, ev)
		}
	}
	return out
}
