package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/fit"
	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/wire"
)

// fakeBackend records what the UI asks for and serves snapshots the test sets. It has no Hub
// unless a test gives it one (withHub), and none of the service's other parts (Offers).
type fakeBackend struct {
	*managerHub            // nil: no Hub
	mu          sync.Mutex // guards every field below
	snap        Snapshot
	cfg         config.Config
	calls       []string
	logs        map[string][]string
	applied     []config.Config
	applyErr    error
	dir         string
	events      chan service.Event
}

var _ Backend = (*fakeBackend)(nil)

func newFakeBackend(s Snapshot) *fakeBackend {
	return &fakeBackend{snap: s, cfg: config.Default(), logs: map[string][]string{}, events: make(chan service.Event, 16)}
}

func (f *fakeBackend) record(format string, args ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
	return nil
}

func (f *fakeBackend) Snapshot() Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.snap
	s.Models = append([]Model(nil), f.snap.Models...)
	return s
}

func (f *fakeBackend) setSnapshot(s Snapshot) {
	f.mu.Lock()
	f.snap = s
	f.mu.Unlock()
}

func (f *fakeBackend) Subscribe() (<-chan service.Event, func()) { return f.events, func() {} }
func (f *fakeBackend) Load(name string) error                    { return f.record("load %s", name) }
func (f *fakeBackend) Unload(_ context.Context, name string, force bool) error {
	return f.record("unload %s force=%v", name, force)
}
func (f *fakeBackend) SetPinned(name string, pinned bool) error {
	return f.record("pin %s %v", name, pinned)
}
func (f *fakeBackend) Logs(name string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.logs[name]...)
}
func (f *fakeBackend) setLogs(name string, lines ...string) {
	f.mu.Lock()
	f.logs[name] = lines
	f.mu.Unlock()
}
func (f *fakeBackend) Config() config.Config {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cfg
}
func (f *fakeBackend) EditConfig(change func(*config.Config) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.applyErr != nil {
		return f.applyErr
	}
	cfg := f.cfg.Clone()
	if err := change(&cfg); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	f.cfg = cfg
	f.applied = append(f.applied, cfg)
	return nil
}
func (f *fakeBackend) Rescan(context.Context) error { return f.record("rescan") }
func (f *fakeBackend) FindLlamaServer() string {
	f.record("find llama-server")
	return f.Snapshot().Server.Path
}
func (f *fakeBackend) ModelsDir() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dir, nil
}

// Offers: the Hub when a test gave one; peers when its configuration has a peers table
// (machinesui_test.go); workers when its snapshot lends (workersui_test.go); no activity, installs
// or estimates.
func (f *fakeBackend) Offers() Offers {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Offers{Hub: f.managerHub != nil, Peers: f.cfg.Peers != nil, Workers: f.snap.Lending.State != ""}
}

func (f *fakeBackend) Activity() wire.Activity        { return wire.Activity{} }
func (f *fakeBackend) UpdateChanged() <-chan struct{} { return nil } // no release checks
func (f *fakeBackend) EstimateWith(string, config.Config) (int64, bool, fit.Room, error) {
	return 0, false, fit.Room{}, ErrNotOffered
}
func (f *fakeBackend) LlamaServerFlags(context.Context) ([]string, error) { return nil, ErrNotOffered }

// DraftCandidates: no catalog to compare, so no model is offered as a draft and none refused.
func (f *fakeBackend) DraftCandidates(string) ([]string, map[string]string, error) {
	return nil, nil, nil
}
func (f *fakeBackend) PlanBuild(context.Context, releases.Request) (releases.Release, releases.Choice, error) {
	return releases.Release{}, releases.Choice{}, ErrNotOffered
}
func (f *fakeBackend) InstallBuild(context.Context, releases.Request, func(releases.Progress)) (releases.Build, error) {
	return releases.Build{}, ErrNotOffered
}

func (f *fakeBackend) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// waitCall waits until the backend saw a call.
func (f *fakeBackend) waitCall(t *testing.T, want string) {
	t.Helper()
	testbed.WaitFor(t, 10*time.Second, "call "+want, func() bool {
		for _, c := range f.callLog() {
			if c == want {
				return true
			}
		}
		return false
	})
}

// uiLoop stands in for Fyne's UI thread in tests: Fyne's test driver runs fyne.Do callbacks on the
// calling goroutine, so the UI's background work and the test's taps would otherwise race. Every
// widget access in a test goes through wait; the UI's onUI goes through do.
type uiLoop struct {
	mu     sync.Mutex // guards queue and closed
	queue  []func()
	wake   chan struct{} // capacity 1: the queue is not empty
	done   chan struct{}
	closed bool
}

func startUILoop(t *testing.T) *uiLoop {
	l := &uiLoop{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for range l.wake {
			for {
				l.mu.Lock()
				if len(l.queue) == 0 {
					closed := l.closed
					l.mu.Unlock()
					if closed {
						return
					}
					break
				}
				fn := l.queue[0]
				l.queue = l.queue[1:]
				l.mu.Unlock()
				fn()
			}
		}
	}()
	t.Cleanup(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		select {
		case l.wake <- struct{}{}:
		default:
		}
		<-l.done
	})
	return l
}

// do queues fn on the loop and returns at once.
func (l *uiLoop) do(fn func()) {
	l.mu.Lock()
	l.queue = append(l.queue, fn)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// wait runs fn on the loop and returns when it has run.
func (l *uiLoop) wait(fn func()) {
	ran := make(chan struct{})
	l.do(func() { fn(); close(ran) })
	<-ran
}

// newTestUI builds the UI over a fake backend on Fyne's headless test app.
func newTestUI(t *testing.T, s Snapshot) (*ui, *fakeBackend, *uiLoop) {
	t.Helper()
	fb := newFakeBackend(s)
	fb.dir = t.TempDir()
	u, l := newTestUIWith(t, fb)
	return u, fb, l
}

// newTestUIWith builds the UI over any backend on Fyne's headless test app, with start at login kept
// in memory.
func newTestUIWith(t *testing.T, b Backend) (*ui, *uiLoop) {
	t.Helper()
	a := test.NewApp()
	t.Cleanup(a.Quit)
	l := startUILoop(t)
	autoOn := false
	var autoMu sync.Mutex // guards autoOn
	u := newUI(a, b, slog.New(slog.NewTextHandler(io.Discard, nil)), autostarter{
		enabled: func() bool { autoMu.Lock(); defer autoMu.Unlock(); return autoOn },
		set:     func(on bool) error { autoMu.Lock(); defer autoMu.Unlock(); autoOn = on; return nil },
	})
	u.onUI = l.do
	u.snap = b.Snapshot()
	return u, l
}

// newWatchedUI is newTestUIWith with the UI watching its backend (as the app does) until the test ends.
func newWatchedUI(t *testing.T, b Backend) (*ui, *uiLoop) {
	t.Helper()
	u, l := newTestUIWith(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { u.watch(ctx); close(watched) }()
	t.Cleanup(func() { cancel(); <-watched })
	return u, l
}

// texts lists the text of every label, button and card title under o.
func texts(o fyne.CanvasObject) []string {
	var out []string
	for _, x := range test.LaidOutObjects(o) {
		switch w := x.(type) {
		case *widget.Label:
			if w.Visible() && w.Text != "" {
				out = append(out, w.Text)
			}
		case *widget.Button:
			if w.Visible() && w.Text != "" {
				out = append(out, "["+w.Text+"]")
			}
		case *widget.Card:
			out = append(out, "#"+w.Title)
		}
	}
	return out
}

func hasText(o fyne.CanvasObject, want string) bool {
	for _, s := range texts(o) {
		if strings.Contains(s, want) {
			return true
		}
	}
	return false
}

// findButton finds a visible button by its label.
func findButton(t *testing.T, o fyne.CanvasObject, label string) *widget.Button {
	t.Helper()
	for _, x := range test.LaidOutObjects(o) {
		if b, ok := x.(*widget.Button); ok && b.Text == label && b.Visible() {
			return b
		}
	}
	t.Fatalf("no button %q in %q", label, texts(o))
	return nil
}
