package engine

import (
	"testing"
	"time"
)

// With room for one model, a model whose clients send back to back keeps serving them while a load
// for another waits: its next request, within the linger of its last, gets a lease at once, and it
// is swapped out only once no request came back for the linger.
func TestSwapKeepsServingItsClients(t *testing.T) {
	s := newSync(t, nil, syncModel{id: "a", ramMiB: 100}, syncModel{id: "b", ramMiB: 100})
	pa := s.load("a")
	la := s.lease(s.request("a"))
	wb := s.request("b")
	s.advance(time.Second)
	la.Release()
	s.advance(linger / 2)
	la = s.lease(s.request("a")) // the client's next request: served by a, no swap
	if pa.stopped() {
		t.Fatal("a was swapped out between two requests of its client")
	}
	la.Release()
	s.advance(linger)
	if !pa.stopped() {
		t.Fatal("a was kept though no request came back for the linger")
	}
	pa.exitStopped()
	s.fx.proc(t, "b").ready()
	s.lease(wb).Release()
}

// Starvation: the model keeps serving its clients at most fair_wait after the waiting load's first
// request; then it stops taking new ones, and the load gets its turn.
func TestSwapWaitsNoLongerThanFairWait(t *testing.T) {
	s := newSync(t, nil, syncModel{id: "a", ramMiB: 100}, syncModel{id: "b", ramMiB: 100})
	pa := s.load("a")
	la := s.lease(s.request("a"))
	wb := s.request("b")
	t0 := s.fx.Now()
	for s.fx.Now().Sub(t0) < s.e.o.FairWait-linger {
		s.advance(linger / 2)
		la.Release()
		la = s.lease(s.request("a")) // back to back, within the linger every time
	}
	if pa.stopped() {
		t.Fatal("a was swapped out before the fair wait was up")
	}
	s.advance(linger)
	wa := s.request("a")
	s.pending(wa) // draining for b: no new lease
	la.Release()
	if !pa.stopped() {
		t.Fatal("a still runs after the fair wait, its last request done")
	}
	pa.exitStopped()
	s.fx.proc(t, "b").ready()
	s.lease(wb).Release()
}
