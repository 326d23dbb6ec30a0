package engine

import (
	"testing"
	"time"
)

// Leases taken and given back on a loaded model with nobody queued skip reconcile (sched.Settled): the
// idle timer still counts from the last lease given back, and a lease taken while a timer of an
// earlier idle spell is armed holds the model past it.
func TestSettledLeasesKeepTheIdleTimer(t *testing.T) {
	s := newSync(t, nil, syncModel{id: "a", ramMiB: 50, settings: Settings{IdleUnload: 5 * time.Second}})
	p := s.load("a") // idle from now: its timer is armed for 5 s
	s.advance(3 * time.Second)
	l1 := s.lease(s.request("a")) // settled: no reconcile
	l2 := s.lease(s.request("a"))
	s.advance(3 * time.Second) // the first idle spell's timer fires: a is busy
	if p.stopped() {
		t.Fatal("a, leased, was stopped by the timer of its earlier idle spell")
	}
	l1.Release() // one of two: settled
	s.advance(10 * time.Second)
	if p.stopped() {
		t.Fatal("a, still leased, was stopped")
	}
	l2.Release() // the last: a is idle, its timer armed for 5 s from now
	s.advance(4 * time.Second)
	if p.stopped() {
		t.Fatal("a was stopped 4 s into its idle spell, want 5")
	}
	s.advance(time.Second + time.Millisecond)
	if !p.stopped() {
		t.Fatal("a was not stopped after 5 s idle")
	}
}

// A load waiting for the memory of a model kept busy by overlapping leases gets it once the fair
// wait has passed, although the busy model is never idle: lease churn with someone queued (where
// every lease taken or given back reconciles) neither hides the busy model nor restarts its wait.
func TestLeasesReconcileWhileSomeoneWaits(t *testing.T) {
	s := newSync(t, func(o *Options) { o.MemoryLimit = 150 * mib }, syncModel{id: "a", ramMiB: 100}, syncModel{id: "b", ramMiB: 100})
	pa := s.load("a")
	s.holds(pa, 100)
	held := s.lease(s.request("a"))
	wb := s.request("b") // no room while a is busy
	s.pending(wb)
	// Overlapping leases keep a busy: each one taken and given back with b queued, until a
	// drains for b (new requests for it then queue too).
	var wa *waiter
	for i := 0; ; i++ {
		if i == 10 {
			t.Fatalf("a, busy for 10 s with b queued (fair wait 3 s), was not drained for b: %+v", s.state("b"))
		}
		wa = s.request("a")
		r, ok := peek(wa)
		if !ok {
			break
		}
		held.Release()
		held = r.lease
		s.advance(time.Second)
	}
	if pa.stopped() {
		t.Fatal("a was stopped under a lease")
	}
	held.Release() // the last lease: a drained stops, and b loads
	if !pa.stopped() {
		t.Fatal("a, drained for b, was not stopped when its last lease went")
	}
	pa.exitStopped()
	s.fx.proc(t, "b").ready()
	s.lease(wb).Release()
}

// peek is w's answer when it has one.
func peek(w *waiter) (result, bool) {
	select {
	case r := <-w.ch:
		w.ch <- r
		return r, true
	default:
		return result{}, false
	}
}
