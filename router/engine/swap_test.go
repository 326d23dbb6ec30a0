package engine

import (
	"errors"
	"strings"
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

// A request that waits its turn while another model serves does not fail at its queue deadline: the
// busy model drains for it at fair_wait, and it is served then.
func TestSwapTurnOutlastsTheQueueDeadline(t *testing.T) {
	s := newSync(t, func(o *Options) { o.QueueTimeout = time.Second; o.FairWait = 3 * time.Second },
		syncModel{id: "a", ramMiB: 100}, syncModel{id: "b", ramMiB: 100})
	pa := s.load("a")
	la := s.lease(s.request("a"))
	wb := s.request("b")
	s.advance(2 * time.Second) // its deadline passed: it waits its turn
	s.pending(wb)
	if w := s.state("b").Wait; w == nil || w.Kind != WaitBusy || !w.Turn {
		t.Fatalf("b waits %+v, want busy, its turn", w)
	}
	s.advance(time.Second) // fair_wait: a drains for b
	s.pending(wb)
	la.Release()
	if !pa.stopped() {
		t.Fatal("a still runs after it drained for b")
	}
	pa.exitStopped()
	s.advance(10 * time.Second) // the load takes long: it answers b
	s.fx.proc(t, "b").ready()
	s.lease(wb).Release()
}

// fair_wait off (negative; the configuration's "0"): a busy model is never drained for a queued
// load, however long it waits; the request fails at its queue deadline, saying so.
func TestSwapFairWaitOff(t *testing.T) {
	s := newSync(t, func(o *Options) { o.QueueTimeout = time.Hour; o.FairWait = -1 }, syncModel{id: "a", ramMiB: 100}, syncModel{id: "b", ramMiB: 100})
	pa := s.load("a")
	la := s.lease(s.request("a"))
	wb := s.request("b")
	for range 10 {
		s.advance(5 * time.Minute)
		la.Release()
		la = s.lease(s.request("a")) // a new request at once: a keeps serving
	}
	if pa.stopped() {
		t.Fatal("a was drained with fair_wait off")
	}
	s.advance(15 * time.Minute)
	var qe *QueueTimeoutError
	if err := s.answer(wb).err; !errors.As(err, &qe) || !strings.Contains(err.Error(), "fair_wait is off") {
		t.Fatalf("b: %v, want a queue timeout saying fair_wait is off", err)
	}
	la.Release()
}
