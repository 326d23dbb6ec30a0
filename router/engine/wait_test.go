package engine

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/mem"
)

// Synchronous tests of why a queued request waits: each kind of reason, as reconcile leaves it on
// the model and Models exports it.

// waitOf is id's wait reason, which the test expects to exist.
func (s *syncEngine) waitOf(id string) WaitReason {
	s.t.Helper()
	st := s.state(id)
	if st.Wait == nil {
		s.t.Fatalf("%s (%s, %d queued) has no wait reason", id, st.State, st.Queued)
	}
	return *st.Wait
}

// ids lists the models a reason names, each as "id:active".
func ids(ms []WaitModel) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID+":"+string(rune('0'+m.Active)))
	}
	return out
}

func TestWaitReasons(t *testing.T) {
	t0 := newFakeFX().Now()
	three := []syncModel{{id: "a", ramMiB: 100}, {id: "b", ramMiB: 100}, {id: "c", ramMiB: 100}}
	cases := []struct {
		name   string
		tune   func(*Options)
		setup  func(s *syncEngine) // leaves the model "b" waiting
		want   WaitReason          // Kind, Position, Since, Behind, MaxLoaded, DrainAt, BusySince
		need   int64
		free   int64
		vict   []string
		holder []string
	}{
		{name: "its load is in progress", setup: func(s *syncEngine) {
			s.request("b")
		}, want: WaitReason{Kind: WaitLoading, Position: 1, Since: t0}, need: 100 * mib, free: 50 * mib},
		{name: "an idle model is evicted for it", setup: func(s *syncEngine) {
			s.load("a")
			s.advance(time.Second)
			s.request("b")
		}, want: WaitReason{Kind: WaitMemory, Position: 1, Since: t0.Add(time.Second)}, need: 100 * mib, free: 50 * mib, vict: []string{"a:0"}},
		{name: "its last child is stopping", setup: func(s *syncEngine) {
			s.load("b")
			s.request("c") // b, idle, is evicted for c
			s.request("b")
		}, want: WaitReason{Kind: WaitStopping, Position: 2, Since: t0}, need: 100 * mib, free: 0},
		{name: "every model is busy", setup: func(s *syncEngine) {
			s.load("a")
			s.lease(s.request("a"))
			s.advance(time.Second)
			s.request("b")
			s.advance(time.Second)
		}, want: WaitReason{Kind: WaitBusy, Position: 1, Since: t0.Add(time.Second), BusySince: t0.Add(time.Second), DrainAt: t0.Add(4 * time.Second)},
			need: 100 * mib, free: 50 * mib, holder: []string{"a:1"}},
		{name: "fair wait drains the busy model for it", setup: func(s *syncEngine) {
			s.load("a")
			s.lease(s.request("a"))
			s.request("b")
			s.advance(s.e.o.FairWait)
		}, want: WaitReason{Kind: WaitBusy, Position: 1, Since: t0, BusySince: t0},
			need: 100 * mib, free: 50 * mib, vict: []string{"a:1"}, holder: []string{"a:1"}},
		{name: "max_loaded is full", tune: func(o *Options) { o.MemoryLimit, o.MaxLoaded = 0, 1 }, setup: func(s *syncEngine) {
			s.e.sample(s.t.Context()) // the budget is what the machine has free
			s.load("a")
			s.lease(s.request("a"))
			s.request("b")
		}, want: WaitReason{Kind: WaitBusy, Position: 1, Since: t0, BusySince: t0, MaxLoaded: 1, DrainAt: t0.Add(3 * time.Second)},
			need: 100 * mib, free: 32<<30 - 100*mib, holder: []string{"a:1"}},
		{name: "behind an earlier blocked load", setup: func(s *syncEngine) {
			s.load("a")
			s.lease(s.request("a"))
			s.request("c")
			s.request("b")
		}, want: WaitReason{Kind: WaitBehind, Position: 2, Since: t0, Behind: "c"}, need: 100 * mib, free: 50 * mib},
		{name: "it drains for a queued load", setup: func(s *syncEngine) {
			s.load("b")
			s.lease(s.request("b"))
			s.request("c")
			s.advance(s.e.o.FairWait)
			s.request("b")
		}, want: WaitReason{Kind: WaitDraining, Position: 2, Since: t0.Add(3 * time.Second)}, need: 100 * mib, free: 50 * mib},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSync(t, c.tune, three...)
			c.setup(s)
			w := s.waitOf("b")
			got := WaitReason{Kind: w.Kind, Position: w.Position, Since: w.Since, Behind: w.Behind, MaxLoaded: w.MaxLoaded, DrainAt: w.DrainAt, BusySince: w.BusySince}
			if got.Kind != c.want.Kind || got.Position != c.want.Position || !got.Since.Equal(c.want.Since) || got.Behind != c.want.Behind ||
				got.MaxLoaded != c.want.MaxLoaded || !got.DrainAt.Equal(c.want.DrainAt) || !got.BusySince.Equal(c.want.BusySince) {
				t.Errorf("reason %+v, want %+v", got, c.want)
			}
			if w.Need != c.need || w.Free != c.free {
				t.Errorf("need %d MiB, free %d MiB; want %d and %d", w.Need>>20, w.Free>>20, c.need>>20, c.free>>20)
			}
			if v := ids(w.Victims); !slices.Equal(v, c.vict) {
				t.Errorf("victims %v, want %v", v, c.vict)
			}
			if h := ids(w.Holders); !slices.Equal(h, c.holder) {
				t.Errorf("holders %v, want %v", h, c.holder)
			}
		})
	}
}

// A reason lasts while the request waits: busy since stays the moment it was first blocked, the
// reason goes once the request is served, and models with nothing queued have none.
func TestWaitReasonLifetime(t *testing.T) {
	s := newSync(t, nil, syncModel{id: "a", ramMiB: 100}, syncModel{id: "b", ramMiB: 100})
	t0 := s.fx.Now()
	pa := s.load("a")
	la := s.lease(s.request("a"))
	wb := s.request("b")
	s.advance(time.Second)
	la2 := s.lease(s.request("a")) // a second stream on a: a lease event, a new reconcile
	if w := s.waitOf("b"); w.Kind != WaitBusy || !w.BusySince.Equal(t0) || len(w.Holders) != 1 || w.Holders[0].Active != 2 {
		t.Fatalf("b %+v, want busy since the start behind a with 2 requests", w)
	}
	if st := s.state("a"); st.Wait != nil {
		t.Fatalf("a, with nothing queued, has a reason %+v", st.Wait)
	}
	la.Release()
	la2.Release()
	// a served while b waited: it is kept for its clients' next request for the linger, no longer.
	if w := s.waitOf("b"); w.Kind != WaitBusy || len(w.Holders) != 1 || w.Holders[0].Active != 0 || !w.DrainAt.Equal(t0.Add(s.e.o.FairWait)) {
		t.Fatalf("b %+v just as a went idle, want busy behind a with its fair wait's end", w)
	}
	s.advance(linger)
	if w := s.waitOf("b"); w.Kind != WaitMemory || !slices.Equal(ids(w.Victims), []string{"a:0"}) {
		t.Fatalf("b %+v once a is idle for the linger, want memory with a being unloaded", w)
	}
	pa.exitStopped()
	if w := s.waitOf("b"); w.Kind != WaitLoading {
		t.Fatalf("b %+v once a is gone, want loading", w)
	}
	s.fx.proc(t, "b").ready()
	s.lease(wb).Release()
	if st := s.state("b"); st.Wait != nil || st.Queued != 0 {
		t.Fatalf("b served, still %d queued with %+v", st.Queued, st.Wait)
	}
}

// On a GPU, the memory a load needs and what is free are given per device.
func TestWaitReasonPerDevice(t *testing.T) {
	s := newSync(t, func(o *Options) { o.MemoryLimit = 0; o.FitTarget = true },
		syncModel{id: "a", ramMiB: 1 << 10, vramMiB: 12 << 10, layers: 32},
		syncModel{id: "b", ramMiB: 1 << 10, vramMiB: 8 << 10, layers: 32})
	s.gpus(false, mem.GPU{Name: "RTX", Device: "CUDA0", Total: 16 * gib, Free: 16 * gib})
	s.load("a")
	la := s.lease(s.request("a"))
	s.request("b")
	w := s.waitOf("b")
	if w.Kind != WaitBusy || !maps.Equal(w.NeedGPU, map[string]int64{"CUDA0": 8 * gib}) || !maps.Equal(w.FreeGPU, map[string]int64{"CUDA0": 4 * gib}) {
		t.Fatalf("b %+v, want busy needing 8 GiB on CUDA0 with 4 GiB free there", w)
	}
	if w.Need != 9*gib {
		t.Fatalf("need %d MiB, want 9 GiB in all", w.Need>>20)
	}
	la.Release()
}
