package child

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runHelperParent() // never returns
	}
	os.Exit(m.Run())
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// testLogger logs the supervisor's own lines (not the child's debug output) into the test log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// fakeSpec returns a Spec running the fake llama-server on an empty model
// file, with the given FAKE_LLAMA_* environment.
func fakeSpec(t *testing.T, env ...string) Spec {
	t.Helper()
	model := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(model, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return Spec{
		Model:          "test-model",
		Binary:         testbed.FakeLlamaServer(t),
		Args:           []string{"-m", model},
		Env:            env,
		RouterPort:     8080,
		LoadTimeout:    30 * time.Second,
		StopTimeout:    10 * time.Second,
		HealthInterval: 20 * time.Millisecond,
		Addrs:          testAddrs(t),
		Logger:         testLogger(t),
	}
}

// withoutRouterProtocol runs the fake through env(1) with
// LLAMA_SERVER_ROUTER_PORT removed, so it behaves like a llama-server that
// prints no state lines and has no stdin orphan guard.
func withoutRouterProtocol(t *testing.T, s Spec) Spec {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("needs env(1)")
	}
	envBin, err := exec.LookPath("env")
	if err != nil {
		t.Skipf("needs env(1): %v", err)
	}
	s.Args = append([]string{"-u", RouterPortEnv, s.Binary}, s.Args...)
	s.Binary = envBin
	return s
}

// recordFile returns a fresh record path and its FAKE_LLAMA_RECORD setting.
func recordFile(t *testing.T) (string, string) {
	p := filepath.Join(t.TempDir(), "record.jsonl")
	return p, "FAKE_LLAMA_RECORD=" + p
}

// events collects a child's events and checks they are delivered serially.
type events struct {
	t      *testing.T
	ch     chan Event
	inside atomic.Int32
	mu     sync.Mutex // guards all
	all    []Event
}

func newEvents(t *testing.T) *events {
	return &events{t: t, ch: make(chan Event, 1024)}
}

func (e *events) on(ev Event) {
	if e.inside.Add(1) != 1 {
		e.t.Errorf("onEvent called concurrently (event %v)", ev.Kind)
	}
	e.mu.Lock()
	if n := len(e.all); n > 0 && e.all[n-1].Kind == Exited {
		e.t.Errorf("event %v delivered after Exited", ev.Kind)
	}
	e.all = append(e.all, ev)
	e.mu.Unlock()
	e.ch <- ev
	e.inside.Add(-1)
}

// next returns the next event, failing the test after within.
func (e *events) next(within time.Duration) Event {
	e.t.Helper()
	select {
	case ev := <-e.ch:
		return ev
	case <-time.After(within):
		e.t.Fatalf("no event within %s", within)
		return Event{}
	}
}

// waitFor skips Loading progress events until kind arrives; any other kind fails the test.
func (e *events) waitFor(kind EventKind, within time.Duration) Event {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for {
		ev := e.next(time.Until(deadline))
		switch {
		case ev.Kind == kind:
			return ev
		case ev.Kind == Loading:
			continue
		default:
			e.t.Fatalf("got %v (err %v, code %d, log tail %q) while waiting for %v", ev.Kind, ev.Err, ev.ExitCode, ev.LogTail, kind)
		}
	}
}

// kinds returns the kinds delivered so far.
func (e *events) kinds() []EventKind {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []EventKind
	for _, ev := range e.all {
		out = append(out, ev.Kind)
	}
	return out
}

// start starts a child and makes sure it is gone when the test ends.
func start(t *testing.T, spec Spec) (*Child, *events) {
	t.Helper()
	ev := newEvents(t)
	c, err := Start(spec, ev.on)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		c.Stop(true)
		select {
		case <-c.Done():
		case <-time.After(15 * time.Second):
			t.Errorf("child %d not reaped 15s after a forced stop", c.PID())
		}
	})
	return c, ev
}

// waitDone waits for Done and checks Exited was the last event.
func waitDone(t *testing.T, c *Child, ev *events, within time.Duration) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(within):
		t.Fatalf("Done not closed within %s", within)
	}
	k := ev.kinds()
	if len(k) == 0 || k[len(k)-1] != Exited {
		t.Fatalf("events %v: want Exited last", k)
	}
	for _, x := range k[:len(k)-1] {
		if x == Exited {
			t.Fatalf("events %v: Exited delivered twice", k)
		}
	}
}

// get does a GET on the child and returns the status code.
func get(t *testing.T, c *Child, path string) int {
	t.Helper()
	resp, err := clientFor(c).Get(c.URL().String() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// clientFor returns an HTTP client that reaches c wherever it listens now.
func clientFor(c *Child) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return c.Addr().Dial(ctx, &net.Dialer{})
		},
		DisableKeepAlives: true,
	}}
}

// testAddrs returns the platform's addresses for children, released when the test ends.
func testAddrs(t *testing.T) Addrs {
	a := NewAddrs()
	t.Cleanup(func() {
		if err := CloseAddrs(a); err != nil {
			t.Error(err)
		}
	})
	return a
}

// fixedFirst hands out given addresses first, then delegates; it records Puts.
type fixedFirst struct {
	mu    sync.Mutex // guards first and puts
	first []Addr
	puts  []Addr
	rest  Addrs
}

func (f *fixedFirst) Get() (Addr, error) {
	f.mu.Lock()
	if len(f.first) > 0 {
		a := f.first[0]
		f.first = f.first[1:]
		f.mu.Unlock()
		return a, nil
	}
	f.mu.Unlock()
	return f.rest.Get()
}

func (f *fixedFirst) Put(a Addr) {
	f.mu.Lock()
	f.puts = append(f.puts, a)
	f.mu.Unlock()
	f.rest.Put(a)
}

// occupy listens on an address of the platform's kind (a unix socket, or a port on Windows)
// without ever answering HTTP.
func occupy(t *testing.T) Addr {
	t.Helper()
	if runtime.GOOS == "windows" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return Addr{Port: l.Addr().(*net.TCPAddr).Port}
	}
	path := filepath.Join(t.TempDir(), "busy.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return Addr{Socket: path}
}

func itoa(n int) string { return strconv.Itoa(n) }

// Environment of the helper parent process used by the kill -9 test.
const (
	helperEnv      = "LLAMATRAY_CHILD_TEST_HELPER" // "loading" or "ready": when to print the child's pid
	helperBinEnv   = "LLAMATRAY_CHILD_TEST_BINARY"
	helperModelEnv = "LLAMATRAY_CHILD_TEST_MODEL"
)

// runHelperParent is the test binary re-executed as a parent: it starts a
// child, prints "pid N" once the child is loading or ready, and blocks until
// it is killed.
func runHelperParent() {
	ready := make(chan struct{})
	var once sync.Once
	spec := Spec{
		Model:  "helper",
		Binary: os.Getenv(helperBinEnv),
		Args:   []string{"-m", os.Getenv(helperModelEnv)},
		Logger: discardLogger(),
	}
	c, err := Start(spec, func(e Event) {
		switch e.Kind {
		case Ready:
			once.Do(func() { close(ready) })
		case Exited:
			fmt.Fprintf(os.Stderr, "helper: child exited early: code %d: %v\n", e.ExitCode, e.Err)
			os.Exit(3)
		}
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "helper: %v\n", err)
		os.Exit(2)
	}
	if os.Getenv(helperEnv) == "ready" {
		<-ready
	}
	fmt.Printf("pid %d\n", c.PID())
	<-c.Done()
	os.Exit(4)
}
