package engine

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// Synchronous scheduler tests: the engine over fake effects, every step a call that returns once
// the engine has decided and acted. No process, no waiting.

// Loads queued behind a busy model are served first come, first served, one at a time in a room for one.
func TestSchedFIFO(t *testing.T) {
	s := newSync(t, nil, syncModel{id: "a", ramMiB: 100}, syncModel{id: "b", ramMiB: 100}, syncModel{id: "c", ramMiB: 100})
	pa := s.load("a")
	la := s.lease(s.request("a"))
	wc := s.request("c")
	wb := s.request("b")
	s.pending(wc)
	s.pending(wb)
	if pa.stopped() {
		t.Fatal("a was stopped while leased")
	}
	la.Release()
	if !pa.stopped() {
		t.Fatal("a, idle now, was not evicted for c")
	}
	pa.exitStopped()
	if got := s.fx.spawned(); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("spawned %v, want a then c (b waits behind c)", got)
	}
	pc := s.fx.proc(t, "c")
	pc.ready()
	lc := s.lease(wc)
	s.pending(wb)
	lc.Release()
	pc.exitStopped()
	s.fx.proc(t, "b").ready()
	s.lease(wb).Release()
	if got := s.fx.spawned(); !slices.Equal(got, []string{"a", "c", "b"}) {
		t.Fatalf("spawned %v, want a, c, b", got)
	}
}

// A queued load that waited FairWait drains the busy model: its new requests queue instead of
// taking leases, it stops once its last lease is back, and it is served again after the load.
func TestSchedFairWaitDrain(t *testing.T) {
	s := newSync(t, nil, syncModel{id: "a", ramMiB: 100}, syncModel{id: "b", ramMiB: 100})
	pa := s.load("a")
	la := s.lease(s.request("a"))
	wb := s.request("b")
	s.advance(s.e.o.FairWait - time.Millisecond)
	if s.state("a").Draining {
		t.Fatal("a drains before b waited FairWait")
	}
	s.advance(time.Millisecond)
	if !s.state("a").Draining {
		t.Fatal("a does not drain after b waited FairWait")
	}
	wa := s.request("a")
	s.pending(wa)
	if pa.stopped() {
		t.Fatal("a stopped while leased")
	}
	la.Release()
	if !pa.stopped() {
		t.Fatal("drained a did not stop once idle")
	}
	pa.exitStopped()
	pb := s.fx.proc(t, "b")
	pb.ready()
	lb := s.lease(wb)
	s.pending(wa)
	lb.Release()
	pb.exitStopped()
	s.fx.proc(t, "a").ready()
	s.lease(wa).Release()
}

// Only an idle model is evicted: with one busy and one idle model loaded, the idle one goes.
func TestSchedEvictsIdleOnly(t *testing.T) {
	s := newSync(t, func(o *Options) { o.MemoryLimit = 250 * mib },
		syncModel{id: "idle", ramMiB: 100}, syncModel{id: "busy", ramMiB: 100}, syncModel{id: "c", ramMiB: 100})
	pi := s.load("idle")
	pb := s.load("busy")
	lb := s.lease(s.request("busy"))
	wc := s.request("c")
	if pb.stopped() {
		t.Fatal("the busy model was signalled")
	}
	if !pi.stopped() {
		t.Fatal("the idle model was not evicted")
	}
	s.pending(wc)
	pi.exitStopped()
	s.fx.proc(t, "c").ready()
	s.lease(wc).Release()
	if pb.stopped() || s.state("busy").State != StateLoaded {
		t.Fatalf("busy is %s", s.state("busy").State)
	}
	lb.Release()
}

// A crash fails the model; a request during the backoff gets the load error at once, without a
// spawn; the first request after it loads the model again.
func TestSchedCrashBackoff(t *testing.T) {
	s := newSync(t, nil, syncModel{id: "a", ramMiB: 10})
	pa := s.load("a")
	la := s.lease(s.request("a"))
	pa.crash()
	st := s.state("a")
	if st.State != StateFailed || st.ExitCode == nil || *st.ExitCode != 134 || st.Active != 1 {
		t.Fatalf("after the crash %+v", st)
	}
	la.Release()
	r := s.answer(s.request("a"))
	var le *LoadError
	if !errors.As(r.err, &le) || !le.RetryAt.Equal(s.fx.Now().Add(time.Second)) || len(le.LogTail) == 0 {
		t.Fatalf("during the backoff: %v", r.err)
	}
	if n := len(s.fx.spawned()); n != 1 {
		t.Fatalf("%d spawns during the backoff", n)
	}
	s.advance(time.Second)
	w := s.request("a")
	s.fx.proc(t, "a").ready()
	s.lease(w).Release()
	if n := len(s.fx.spawned()); n != 2 {
		t.Fatalf("%d spawns, want 2", n)
	}
}

// holds makes the probe report that p holds n MiB and takes a sample.
func (s *syncEngine) holds(p *fakeProc, n int64) {
	s.probe.set(func(fp *fakeProbe) { fp.rss[p.pid] = n * mib })
	s.e.sample(s.t.Context())
}

func (s *syncEngine) advance(d time.Duration) { s.fx.advance(d) }

// OnStop hears of each model whose child is about to be stopped, before the stop is sent: the
// proxy closes its idle connections to it, which llama-server waits for before it exits.
func TestSchedOnStopBeforeTheStop(t *testing.T) {
	var heard []string
	var procs map[string]*fakeProc
	s := newSync(t, func(o *Options) {
		o.MemoryLimit = 150 * mib
		o.OnStop = func(id string) {
			if p := procs[id]; p != nil && p.stopped() {
				t.Errorf("OnStop(%s) after its child was told to stop", id)
			}
			heard = append(heard, id)
		}
	}, syncModel{id: "a", ramMiB: 100}, syncModel{id: "b", ramMiB: 100})
	procs = map[string]*fakeProc{"a": s.load("a")}
	wb := s.request("b") // a is idle: evicted for b
	if !procs["a"].stopped() || len(heard) != 1 || heard[0] != "a" {
		t.Fatalf("after the eviction: heard %v, a stopped %v", heard, procs["a"].stopped())
	}
	procs["a"].exitStopped()
	s.fx.proc(t, "b").ready()
	s.lease(wb).Release()
}
