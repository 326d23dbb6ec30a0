package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeWorkers are links a test sets: each worker's local end, or the error its check gives.
type fakeWorkers struct {
	mu     sync.Mutex // guards every field below
	ends   map[string]string
	errs   map[string]error
	checks [][]string // the names of each Prepare, in order
	devs   []WorkerDevice
}

func (f *fakeWorkers) Prepare(_ context.Context, names []string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks = append(f.checks, slices.Clone(names))
	var out []string
	for _, n := range names {
		if err := f.errs[n]; err != nil {
			return nil, &WorkerError{Worker: n, Err: fmt.Errorf("worker %s (10.0.0.9:50052): %w", n, err)}
		}
		out = append(out, f.ends[n])
	}
	return out, nil
}

func (f *fakeWorkers) Down(_ context.Context, names []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range names {
		if err := f.errs[n]; err != nil {
			return &WorkerError{Worker: n, Err: fmt.Errorf("worker %s (10.0.0.9:50052): %w", n, err)}
		}
	}
	return nil
}

func (f *fakeWorkers) Devices() []WorkerDevice {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.devs)
}

func (f *fakeWorkers) set(name string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs[name] = err
}

// newWorkerSync is a synchronous engine with workers a and b: model "ab" spread over both, "b2"
// over b alone, "local" on none.
func newWorkerSync(t *testing.T) (*syncEngine, *fakeWorkers) {
	fw := &fakeWorkers{ends: map[string]string{"a": "127.0.0.1:40001", "b": "127.0.0.1:40002"}, errs: map[string]error{}}
	s := newSync(t, func(o *Options) { o.Workers = fw },
		syncModel{id: "ab", ramMiB: 10, settings: Settings{Workers: []string{"a", "b"}}},
		syncModel{id: "b2", ramMiB: 10, settings: Settings{Workers: []string{"b"}}},
		syncModel{id: "local", ramMiB: 10})
	return s, fw
}

func TestWorkersRPCArgs(t *testing.T) {
	s, fw := newWorkerSync(t)
	p := s.load("ab")
	args := strings.Join(p.spec.Args, " ")
	if !strings.Contains(args, "--rpc 127.0.0.1:40001,127.0.0.1:40002") {
		t.Fatalf("child args %q lack --rpc with both ends", args)
	}
	if st := s.state("ab"); !slices.Contains(st.Args, "--rpc") || !slices.Equal(st.Workers, []string{"a", "b"}) {
		t.Fatalf("status args %q, workers %v", st.Args, st.Workers)
	}
	if len(fw.checks) != 1 || !slices.Equal(fw.checks[0], []string{"a", "b"}) {
		t.Fatalf("checks %v, want one of a,b", fw.checks)
	}
	pl := s.load("local")
	if slices.Contains(pl.spec.Args, "--rpc") || len(fw.checks) != 1 {
		t.Fatalf("a model without workers got %q, checks %v", pl.spec.Args, fw.checks)
	}
}

func TestWorkersCheckFailsTheLoadAtOnce(t *testing.T) {
	s, fw := newWorkerSync(t)
	fw.set("b", errors.New("worker refused the token"))
	w := s.request("ab")
	r := s.answer(w)
	var le *LoadError
	if !errors.As(r.err, &le) || !strings.Contains(r.err.Error(), "worker b (10.0.0.9:50052): worker refused the token") {
		t.Fatalf("answer %v, want a load error naming worker b", r.err)
	}
	var we *WorkerError
	if !errors.As(r.err, &we) || we.Worker != "b" {
		t.Fatalf("error %v is not worker b's", r.err)
	}
	if got := s.fx.spawned(); len(got) != 0 {
		t.Fatalf("children spawned %v, want none", got)
	}
	st := s.state("ab")
	if st.State != StateFailed || !strings.Contains(st.Error, "worker b") || st.NextRetry.IsZero() {
		t.Fatalf("state %s error %q retry %v, want failed naming worker b with a backoff", st.State, st.Error, st.NextRetry)
	}
	// Within the backoff a request fails at once; after it, with the worker back, it loads.
	if r := s.answer(s.request("ab")); r.err == nil {
		t.Fatal("a request within the backoff was not refused")
	}
	fw.set("b", nil)
	s.fx.advance(2 * time.Second)
	s.load("ab")
}

func TestWorkersOneModelPerWorker(t *testing.T) {
	s, _ := newWorkerSync(t)
	s.load("ab")
	l := s.lease(s.request("ab")) // ab is busy on a and b
	w := s.request("b2")
	s.pending(w)
	st := s.state("b2")
	if st.Wait == nil || st.Wait.Kind != WaitWorker || st.Wait.Worker != "b" || len(st.Wait.Holders) != 1 || st.Wait.Holders[0].ID != "ab" {
		t.Fatalf("b2's wait %+v, want worker b used by ab", st.Wait)
	}
	if got := s.fx.spawned(); slices.Contains(got, "b2") {
		t.Fatalf("b2 spawned beside ab on worker b: %v", got)
	}
	// Idle, ab is evicted for b2.
	l.Release()
	pab := s.fx.proc(t, "ab")
	if !pab.stopped() {
		t.Fatal("idle ab was not stopped for b2")
	}
	pab.exitStopped()
	s.fx.proc(t, "b2").ready()
	s.lease(w).Release()
}

func TestWorkersLostLinkFailsOnlyItsModel(t *testing.T) {
	s, _ := newWorkerSync(t)
	s.load("ab")
	s.load("local")
	l := s.lease(s.request("ab"))
	s.e.WorkerLost("a", errors.New("worker a (10.0.0.9:50052): link lost: connection reset"))
	p := s.fx.proc(t, "ab")
	if !p.stopped() {
		t.Fatal("the child on the lost worker was not stopped")
	}
	if err := l.Lost(); err == nil || !strings.Contains(err.Error(), "worker a") {
		t.Fatalf("the in-flight lease's Lost() = %v, want worker a's error", err)
	}
	queued := s.request("ab")
	s.pending(queued)
	p.exitStopped()
	r := s.answer(queued)
	if r.err == nil || !strings.Contains(r.err.Error(), "worker a (10.0.0.9:50052): link lost") {
		t.Fatalf("the queued request got %v, want worker a's error", r.err)
	}
	l.Release()
	st := s.state("ab")
	if st.State != StateFailed || !strings.Contains(st.Error, "worker a") || st.NextRetry.IsZero() {
		t.Fatalf("ab is %s (%q, retry %v), want failed naming worker a with a backoff", st.State, st.Error, st.NextRetry)
	}
	if st := s.state("local"); st.State != StateLoaded {
		t.Fatalf("local is %s, want it still loaded", st.State)
	}
	s.lease(s.request("local")).Release()
}

func TestWorkersLostAfterTheChildAborted(t *testing.T) {
	s, _ := newWorkerSync(t)
	s.load("b2")
	s.fx.proc(t, "b2").crash() // llama-server aborted when its RPC connection dropped
	s.e.WorkerLost("b", errors.New("worker b (10.0.0.9:50052): link lost"))
	if st := s.state("b2"); st.State != StateFailed || !strings.HasPrefix(st.Error, "worker b (10.0.0.9:50052): link lost") {
		t.Fatalf("b2 is %s (%q), want failed naming worker b", st.State, st.Error)
	}
}

// The child aborts when its RPC connection drops, before (or without) any lost-link notice: the
// engine asks which worker is down and names it.
func TestWorkersChildAbortIsBlamedOnTheDownWorker(t *testing.T) {
	s, fw := newWorkerSync(t)
	s.load("ab")
	l := s.lease(s.request("ab"))
	fw.set("a", errors.New("worker unreachable"))
	s.fx.proc(t, "ab").crash()
	st := s.state("ab")
	if st.State != StateFailed || !strings.HasPrefix(st.Error, "worker a (10.0.0.9:50052): worker unreachable") {
		t.Fatalf("ab is %s (%q), want failed naming worker a", st.State, st.Error)
	}
	if err := l.Lost(); err == nil || !strings.Contains(err.Error(), "worker a") {
		t.Fatalf("Lost() = %v, want worker a's error", err)
	}
	l.Release()
}

// A child that crashes while its workers all answer is an ordinary crash.
func TestWorkersCrashWithWorkersUp(t *testing.T) {
	s, _ := newWorkerSync(t)
	s.load("ab")
	l := s.lease(s.request("ab"))
	s.fx.proc(t, "ab").crash()
	if err := l.Lost(); err != nil {
		t.Fatalf("Lost() = %v with every worker up", err)
	}
	if st := s.state("ab"); st.State != StateFailed || strings.Contains(st.Error, "worker") {
		t.Fatalf("ab is %s (%q), want an ordinary failure", st.State, st.Error)
	}
	l.Release()
}
