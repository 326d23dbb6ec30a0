package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/mem"
)

// Synchronous tests of the scheduling defects found at real scale (slow loads, sleepers, GPUs).

// The queue deadline is for waiting on memory or a slot: a model that loads longer than it is not
// timed out (the load has its own timeout), whether the request came through Acquire or Load.
func TestSchedQueueDeadlineSparesALoad(t *testing.T) {
	s := newSync(t, func(o *Options) { o.QueueTimeout = time.Second }, syncModel{id: "a", ramMiB: 10})
	w := s.request("a")
	p := s.fx.proc(t, "a")
	s.advance(3 * time.Second) // a 40 GB model on a slow disk
	s.pending(w)
	if st := s.state("a"); st.State != StateLoading || st.Queued != 1 {
		t.Fatalf("a %s with %d queued, want loading with its request queued", st.State, st.Queued)
	}
	p.ready()
	l := s.lease(w)
	if l.Waited != 3*time.Second {
		t.Fatalf("waited %s, want 3s", l.Waited)
	}
	l.Release()
}

// Waiting for memory that nothing frees (a pinned, busy model holds it) ends at the deadline, with
// the reason it waited.
func TestSchedQueueDeadlineForMemory(t *testing.T) {
	s := newSync(t, func(o *Options) { o.QueueTimeout = time.Second }, syncModel{id: "a", ramMiB: 100}, syncModel{id: "b", ramMiB: 100})
	s.load("a")
	if err := s.e.SetPinned("a", true); err != nil {
		t.Fatal(err)
	}
	la := s.lease(s.request("a"))
	w := s.request("b")
	s.advance(time.Second)
	var qe *QueueTimeoutError
	if r := s.answer(w); !errors.As(r.err, &qe) || qe.Waited != time.Second || qe.Wait == nil || qe.Wait.Kind != WaitBusy || qe.Wait.Turn ||
		!strings.Contains(r.err.Error(), "held by a, pinned") {
		t.Fatalf("b: %v, want a queue timeout after 1s naming pinned a", r.err)
	}
	if st := s.state("b"); st.Queued != 0 || st.State != StateUnloaded {
		t.Fatalf("b %+v", st)
	}
	la.Release()
}

// A load error that comes at the deadline is reported as the load error, in either order.
func TestSchedLoadErrorAtTheDeadline(t *testing.T) {
	for _, crashFirst := range []bool{false, true} {
		s := newSync(t, func(o *Options) { o.QueueTimeout = time.Second }, syncModel{id: "a", ramMiB: 10})
		if crashFirst {
			s.fx.AfterFunc(time.Second, func() { s.fx.proc(t, "a").crash() })
		}
		w := s.request("a")
		if !crashFirst {
			s.fx.AfterFunc(time.Second, func() { s.fx.proc(t, "a").crash() })
		}
		s.advance(time.Second)
		var le *LoadError
		if r := s.answer(w); !errors.As(r.err, &le) || le.ExitCode == nil || *le.ExitCode != 134 {
			t.Fatalf("crash first %v: %v, want the load error", crashFirst, r.err)
		}
	}
}

// A fair-wait drain is for the request that waited: when it leaves (its client went; its deadline
// does not end it while the drain is under way for it, TestSwapTurnOutlastsTheQueueDeadline), the
// drained model takes requests again.
func TestSchedDrainEndsWithItsRequest(t *testing.T) {
	s := newSync(t, func(o *Options) { o.QueueTimeout = 5 * time.Second }, syncModel{id: "a", ramMiB: 100}, syncModel{id: "b", ramMiB: 100})
	pa := s.load("a")
	la := s.lease(s.request("a")) // a long stream
	wb := s.request("b")
	s.advance(s.e.o.FairWait)
	if !s.state("a").Draining {
		t.Fatal("a does not drain for b")
	}
	wa := s.request("a") // arrives while a drains: queued
	s.pending(wa)
	s.e.leave(wb)
	if st := s.state("a"); st.Draining {
		t.Fatal("a still drains for a request that is gone")
	}
	s.lease(wa).Release()
	s.lease(s.request("a")).Release()
	if pa.stopped() {
		t.Fatal("a was stopped")
	}
	la.Release()
	if pa.stopped() || s.state("a").State != StateLoaded {
		t.Fatal("a stopped after its drain was called off")
	}
}

// A model with a queued request is never stopped by its idle-unload timer, nor by memory pressure:
// here a sleeping model waits for room to wake behind a busy one.
func TestSchedQueuedModelNotUnloaded(t *testing.T) {
	for _, by := range []string{"idle timer", "pressure"} {
		t.Run(by, func(t *testing.T) {
			s := newSync(t, func(o *Options) { o.MemoryLimit = 240 * mib },
				syncModel{id: "s", ramMiB: 100, settings: Settings{IdleUnload: 5 * time.Second}}, syncModel{id: "y", ramMiB: 150})
			ps := s.load("s")
			ps.sleep()
			s.holds(ps, 10)
			py := s.load("y")
			ly := s.lease(s.request("y"))
			s.holds(py, 150)
			ws := s.request("s") // waking needs 90 MiB more, 80 are free, nothing is idle
			s.pending(ws)
			if by == "idle timer" {
				s.advance(5 * time.Second)
			} else {
				s.e.o.Reserve = 1 << 30
				s.probe.set(func(p *fakeProbe) { p.sys.Available = 512 << 20 })
				s.e.sample(t.Context())
			}
			if ps.stopped() {
				t.Fatalf("s, with a request queued, was stopped by the %s", by)
			}
			ly.Release()
			if by == "idle timer" { // y, idle now, makes room for s to wake
				if !py.stopped() {
					t.Fatal("idle y was not evicted for s")
				}
				py.exitStopped()
				s.lease(ws).Release()
			}
		})
	}
}

// A sleeping model whose request is queued first is woken when room comes, not evicted for a load
// queued after it (which waits instead).
func TestSchedSleepingWaiterWokenNotEvicted(t *testing.T) {
	s := newSync(t, func(o *Options) { o.MemoryLimit = 290 * mib },
		syncModel{id: "s", ramMiB: 100}, syncModel{id: "x", ramMiB: 100}, syncModel{id: "y", ramMiB: 100}, syncModel{id: "b", ramMiB: 100})
	ps := s.load("s")
	px := s.load("x")
	ps.sleep()
	s.holds(ps, 10) // asleep, it gave its weights back
	py := s.load("y")
	ly := s.lease(s.request("y"))
	s.holds(px, 100)
	s.holds(py, 100)
	ws := s.request("s")
	s.pending(ws) // waking needs 90 MiB more; 80 are free: x, idle, goes
	if !px.stopped() {
		t.Fatal("idle x was not evicted for the wake of s")
	}
	wb := s.request("b")
	if ps.stopped() {
		t.Fatal("sleeping s, first in the queue, was evicted for b queued after it")
	}
	px.exitStopped()
	ls := s.lease(ws)
	if ps.stopped() || slices.Contains(s.fx.spawned()[3:], "s") {
		t.Fatal("s was cold loaded instead of woken")
	}
	s.pending(wb)
	ls.Release()
	ly.Release()
}

// Learned footprints keep their VRAM: after a first run a model still needs the GPU, so two models
// that each fill most of a 24 GB GPU are never started side by side.
func TestSchedLearnedFootprintKeepsVRAM(t *testing.T) {
	const gib = int64(1) << 30
	s := newSync(t, func(o *Options) { o.MemoryLimit = 0 },
		syncModel{id: "a", ramMiB: 1 << 10, vramMiB: 20 << 10}, syncModel{id: "b", ramMiB: 1 << 10, vramMiB: 20 << 10})
	gpu := func(free int64) { // what the GPU has free now, sampled
		s.probe.set(func(p *fakeProbe) { p.sys.GPUs = []mem.GPU{{Name: "GPU0", Total: 24 * gib, Free: free}} })
		s.e.sample(t.Context())
	}
	gpu(24 * gib)
	pa := s.load("a")
	s.probe.set(func(p *fakeProbe) { p.rss[pa.pid], p.vram[pa.pid] = gib, 20*gib })
	gpu(4 * gib)
	if st := s.state("a"); st.LearnedBytes != 21*gib {
		t.Fatalf("learned %d, want 21 GiB", st.LearnedBytes)
	}
	gone, cancel := context.WithCancel(t.Context())
	cancel() // Unload stops the child and returns; it exits below
	if err := s.e.Unload(gone, "a", true); err == nil {
		t.Fatal("unload returned before the child exited")
	}
	pa.exitStopped()
	gpu(24 * gib)
	pb := s.load("b")
	s.probe.set(func(p *fakeProbe) { p.rss[pb.pid], p.vram[pb.pid] = gib, 20*gib })
	gpu(4 * gib)
	w := s.request("a")
	if got := s.fx.spawned(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("spawned %v: a started beside b on a GPU that holds one", got)
	}
	if !pb.stopped() {
		t.Fatal("idle b was not evicted for a")
	}
	pb.exitStopped()
	gpu(24 * gib)
	s.fx.proc(t, "a").ready()
	s.lease(w).Release()
}

// A model that loads fine after a crash starts its backoff from the beginning when it crashes again.
func TestSchedBackoffResetsAfterAGoodLoad(t *testing.T) {
	s := newSync(t, nil, syncModel{id: "a", ramMiB: 10})
	for i := 0; i < 3; i++ {
		p := s.load("a")
		p.crash()
		if st := s.state("a"); !st.NextRetry.Equal(s.fx.Now().Add(time.Second)) {
			t.Fatalf("crash %d: next retry in %s, want 1s after a good load", i+1, st.NextRetry.Sub(s.fx.Now()))
		}
		s.advance(time.Second)
	}
	// Loads that fail in a row after that crash still back off longer each time.
	for i, want := range []time.Duration{2 * time.Second, 4 * time.Second} {
		s.request("a")
		s.fx.proc(t, "a").crash()
		if st := s.state("a"); !st.NextRetry.Equal(s.fx.Now().Add(want)) {
			t.Fatalf("failed load %d: next retry in %s, want %s", i+1, st.NextRetry.Sub(s.fx.Now()), want)
		}
		s.advance(want)
	}
}

// Lowering max_loaded or the memory limit stops idle models (least recently used first) until the
// rest fits; busy and pinned models stay.
func TestSchedLoweredLimitsStopIdleModels(t *testing.T) {
	t.Run("max_loaded", func(t *testing.T) {
		s := newSync(t, func(o *Options) { o.MemoryLimit = 0 }, syncModel{id: "a", ramMiB: 10}, syncModel{id: "b", ramMiB: 10}, syncModel{id: "c", ramMiB: 10})
		pa, pb, pc := s.load("a"), s.load("b"), s.load("c")
		s.setLimits(func(l *Limits) { l.MaxLoaded = 1 })
		if !pa.stopped() || !pb.stopped() || pc.stopped() {
			t.Fatalf("stopped a %v b %v c %v, want a and b (least recently used), not c", pa.stopped(), pb.stopped(), pc.stopped())
		}
	})
	t.Run("memory_limit", func(t *testing.T) {
		s := newSync(t, func(o *Options) { o.MemoryLimit = 400 * mib },
			syncModel{id: "a", ramMiB: 100}, syncModel{id: "busy", ramMiB: 100}, syncModel{id: "pinned", ramMiB: 100, settings: Settings{Pinned: true}}, syncModel{id: "d", ramMiB: 100})
		pa, pbusy, ppin, pd := s.load("a"), s.load("busy"), s.load("pinned"), s.load("d")
		l := s.lease(s.request("busy"))
		s.setLimits(func(l *Limits) { l.MemoryLimit = 250 * mib })
		if !pa.stopped() || pbusy.stopped() || ppin.stopped() || !pd.stopped() {
			t.Fatalf("stopped a %v busy %v pinned %v d %v, want a and d only", pa.stopped(), pbusy.stopped(), ppin.stopped(), pd.stopped())
		}
		l.Release()
	})
}

// setLimits applies the engine's current limits with f's changes.
func (s *syncEngine) setLimits(f func(*Limits)) {
	o := s.e.o
	l := Limits{Binary: o.Binary, MemoryLimit: o.MemoryLimit, Reserve: o.Reserve, MaxLoaded: o.MaxLoaded,
		QueueTimeout: o.QueueTimeout, FairWait: o.FairWait, LoadTimeout: o.LoadTimeout, StopTimeout: o.StopTimeout}
	f(&l)
	s.e.SetLimits(l)
}

// Queued requests protect a model from the loads queued after them only: a load queued first may
// still evict a sleeping model whose wake was asked for later (first come, first served), instead of
// both waiting until the first one's deadline.
func TestSchedQueuedLaterIsNoShield(t *testing.T) {
	s := newSync(t, func(o *Options) { o.MemoryLimit = 200 * mib },
		syncModel{id: "s", ramMiB: 110}, syncModel{id: "y", ramMiB: 100}, syncModel{id: "b", ramMiB: 195})
	ps, py, ly := s.asleepBesideBusy("s", 10, "y", 100)
	wb := s.request("b") // needs all but 5 MiB: y, busy, and s must go
	ws := s.request("s") // waking needs 100 MiB more, 90 are free: queued after b
	s.pending(wb)
	s.pending(ws)
	ly.Release()
	if !py.stopped() || !ps.stopped() {
		t.Fatalf("y stopped %v, s stopped %v: b, first in the queue, waits behind a model queued after it", py.stopped(), ps.stopped())
	}
	py.exitStopped()
	ps.exitStopped()
	pb := s.fx.proc(t, "b")
	pb.ready()
	lb := s.lease(wb)
	s.pending(ws)
	lb.Release()
	pb.exitStopped()
	s.fx.proc(t, "s").ready()
	s.lease(ws).Release()
}
