package engine

import (
	"slices"
	"testing"
	"time"
)

// queueLengths drains ch and returns id's queue lengths (not the wait reasons).
func queueLengths(ch <-chan Event, id string) []int {
	var out []int
	for {
		select {
		case ev := <-ch:
			if ev.Kind == EventQueue && ev.Model == id && ev.Wait == "" {
				out = append(out, ev.Queued)
			}
		default:
			return out
		}
	}
}

// Every change of a model's queue length is published: requests queued, timed out, and served.
func TestSchedQueueEventsEveryChange(t *testing.T) {
	// fair_wait off: nothing drains busy a for b, so b's requests time out at their deadline
	s := newSync(t, func(o *Options) { o.QueueTimeout = time.Second; o.FairWait = -1 }, syncModel{id: "a", ramMiB: 100}, syncModel{id: "b", ramMiB: 100})
	pa := s.load("a")
	la := s.lease(s.request("a"))
	ch, cancel := s.e.Subscribe()
	defer cancel()
	s.request("b")
	s.request("b")
	s.advance(time.Second) // both time out
	wb := s.request("b")
	la.Release() // a, idle, is evicted for b
	pa.exitStopped()
	s.fx.proc(t, "b").ready()
	s.lease(wb).Release()
	want := []int{1, 2, 1, 0, 1, 0}
	if got := queueLengths(ch, "b"); !slices.Equal(got, want) {
		t.Fatalf("b's queue events %v, want %v", got, want)
	}
}

// A request for a sleeping model takes its place in line when others wait: its wake may not take
// the memory a load queued before it is waiting for (strict FIFO, as reconcile serves the queue).
func TestSchedSleeperWakeKeepsItsPlaceInLine(t *testing.T) {
	s := newSync(t, func(o *Options) { o.MemoryLimit = 240 * mib },
		syncModel{id: "s", ramMiB: 100}, syncModel{id: "y", ramMiB: 150}, syncModel{id: "a", ramMiB: 200})
	_, _, ly := s.asleepBesideBusy("s", 10, "y", 150)
	wa := s.request("a") // needs 200: blocked behind busy y
	ws := s.request("s") // waking needs 90 more, 80 are free: queued behind a
	s.pending(wa)
	s.pending(ws)
	s.setLimits(func(l *Limits) { l.MemoryLimit = 250 * mib }) // 90 free now: enough for the wake, not for a
	s.pending(ws)
	w2 := s.request("s") // a second request for s waits in line too
	s.pending(w2)
	if st := s.state("s"); st.State != StateSleeping || st.Active != 0 || st.Queued != 2 {
		t.Fatalf("s %s with %d active and %d queued, want asleep with 2 queued behind a", st.State, st.Active, st.Queued)
	}
	ly.Release()
}
