package sched

import (
	"reflect"
	"testing"
	"time"
)

// linger is s with a 2 s linger: a loaded model that served while a load waited is kept that long
// for its clients' next requests (Plan 5.7 e), never past the load's fair wait.
func linger(s State) State { s.Linger = 2 * time.Second; return s }

// Swap-aware rows (Plan 5.7 e): with room for one model, the model that serves requests sent back
// to back keeps serving them while a load for another waits, for Linger after its last request and
// never past FairWait; one that went idle before the load was asked for is evicted at once.
func TestPlanSwapRows(t *testing.T) {
	never := time.Time{}
	pinned := func(m Model) Model { m.Pinned = true; return m }
	rows := []planRow{
		{"a model that served after the load was queued keeps serving: no eviction before its linger is over",
			linger(state(5, 4, q("b"), used(mod("a", Loaded, ram(4)), 4), off("b", ram(4)))),
			[]string{"wait b busy 1 since=0s need=4 free=0 holders=a busy-since=5s drain-at=30s"}, at(6)},
		{"its requests, queued while the load waits, are served first",
			linger(state(5, 4, []Waiter{{Model: "b", Enq: at(0)}, {Model: "a", Enq: at(5)}}, used(mod("a", Loaded, ram(4)), 4), off("b", ram(4)))),
			[]string{"wait b busy 1 since=0s need=4 free=0 holders=a busy-since=5s drain-at=30s", "admit a"}, at(6)},
		{"its linger over with no request back: it is evicted for the load",
			linger(state(6, 4, q("b"), used(mod("a", Loaded, ram(4)), 4), off("b", ram(4)))),
			[]string{"stop a evicted for b", "wait b memory 1 since=0s need=4 free=0 victims=a"}, never},
		{"one client switching models: idle since before the load was asked for, it is evicted at once",
			linger(state(3, 4, []Waiter{{Model: "b", Enq: at(3)}}, used(mod("a", Loaded, ram(4)), 2), off("b", ram(4)))),
			[]string{"stop a evicted for b", "wait b memory 1 since=3s need=4 free=0 victims=a"}, never},
		{"starvation: a model served back to back is evicted once the load has waited fair_wait",
			linger(state(30, 4, q("b"), used(mod("a", Loaded, ram(4)), 29), off("b", ram(4)))),
			[]string{"stop a evicted for b", "wait b memory 1 since=0s need=4 free=0 victims=a"}, never},
		{"starvation: busy at fair_wait, it drains for the load like any busy model",
			linger(state(30, 4, q("b"), used(busy(mod("a", Loaded, ram(4))), 29), off("b", ram(4)))),
			[]string{"wait b busy 1 since=0s need=4 free=0 victims=a holders=a busy-since=30s", "drain a for b"}, never},
		{"fairness: the idle model not serving is evicted, the one serving kept",
			linger(state(5, 8, q("b"), used(mod("a", Loaded, ram(4)), 4), used(mod("c", Loaded, ram(4)), 0), off("b", ram(4)))),
			[]string{"stop c evicted for b", "wait b memory 1 since=0s need=4 free=0 victims=c"}, at(6)},
		{"fairness: a later load waits its turn behind the held one, and holds nothing on its own",
			linger(state(5, 4, q("b", "c"), used(mod("a", Loaded, ram(4)), 4), off("b", ram(4)), off("c", ram(4)))),
			[]string{"wait b busy 1 since=0s need=4 free=0 holders=a busy-since=5s drain-at=30s", "wait c behind 2 since=1s need=4 free=0 behind=b"}, at(6)},
		{"fairness: each load's own first waiter counts: served only before b was asked for, a is evicted for it",
			linger(state(5, 4, []Waiter{{Model: "b", Enq: at(4)}, {Model: "c", Enq: at(4)}}, used(mod("a", Loaded, ram(4)), 3), off("b", ram(4)), off("c", ram(4)))),
			[]string{"stop a evicted for b", "wait b memory 1 since=4s need=4 free=0 victims=a", "wait c busy 2 since=4s need=4 free=0 holders=b busy-since=5s"}, at(34)},
		{"pinned: never a victim, serving or not; no drain time is promised",
			linger(state(5, 4, q("b"), pinned(used(mod("p", Loaded, ram(4)), 4)), off("b", ram(4)))),
			[]string{"wait b busy 1 since=0s need=4 free=0 holders=p busy-since=5s"}, at(30)},
		{"pinned beside a serving model: the serving one is held for its linger, then evicted",
			linger(state(5, 8, q("b"), pinned(used(mod("p", Loaded, ram(4)), 1)), used(mod("a", Loaded, ram(4)), 4), off("b", ram(4)))),
			[]string{"wait b busy 1 since=0s need=4 free=0 holders=a,p busy-since=5s drain-at=30s"}, at(6)},
		{"a sleeping model serves nothing: it is evicted at once",
			linger(state(5, 4, q("b"), used(mod("s", Sleeping, ram(4)), 4), off("b", ram(4)))),
			[]string{"stop s evicted for b", "wait b memory 1 since=0s need=4 free=0 victims=s"}, never},
		{"no linger (0): evicted at once, as before",
			state(5, 4, q("b"), used(mod("a", Loaded, ram(4)), 4), off("b", ram(4))),
			[]string{"stop a evicted for b", "wait b memory 1 since=0s need=4 free=0 victims=a"}, never},
	}
	runPlanRows(t, rows)
}

// The next model (Plan 5): the load whose first waiter came first goes first, whatever the waiters
// behind it; a loaded model's waiters are served wherever they stand; pinned models and fair_wait
// off never drain.
func TestPlanNextModel(t *testing.T) {
	never := time.Time{}
	fairOff := func(s State) State { s.FairWait = 0; return s }
	rows := []planRow{
		{"the oldest first waiter goes first, though another load has as many waiters",
			state(5, 4, []Waiter{{Model: "b", Enq: at(1)}, {Model: "c", Enq: at(2)}, {Model: "c", Enq: at(3)}, {Model: "b", Enq: at(4)}}, used(mod("a", Loaded, ram(4)), 0), off("b", ram(4)), off("c", ram(4))),
			[]string{"stop a evicted for b", "wait b memory 1 since=1s need=4 free=0 victims=a", "wait c busy 2 since=2s need=4 free=0 holders=b busy-since=5s"}, at(32)},
		{"starvation: of two overdue loads the older goes first, though the other has more waiters",
			state(60, 4, []Waiter{{Model: "b", Enq: at(1)}, {Model: "c", Enq: at(2)}, {Model: "c", Enq: at(3)}}, busy(used(mod("a", Loaded, ram(4)), 0)), off("b", ram(4)), off("c", ram(4))),
			[]string{"wait b busy 1 since=1s need=4 free=0 victims=a holders=a busy-since=60s", "drain a for b", "wait c behind 2 since=2s need=4 free=0 behind=b"}, never},
		{"a loaded model's waiters are served whatever their place: no swap while it has some",
			linger(state(5, 4, []Waiter{{Model: "b", Enq: at(0)}, {Model: "b", Enq: at(1)}, {Model: "a", Enq: at(4)}}, used(mod("a", Loaded, ram(4)), 4), off("b", ram(4)))),
			[]string{"wait b busy 1 since=0s need=4 free=0 holders=a busy-since=5s drain-at=30s", "admit a"}, at(6)},
		{"pinned: a pinned model with waiters keeps them first; the load waits, with no drain promised",
			state(5, 4, []Waiter{{Model: "b", Enq: at(0)}, {Model: "b", Enq: at(1)}, {Model: "p", Enq: at(4)}}, with(busy(mod("p", Loaded, ram(4))), func(m *Model) { m.Pinned = true }), off("b", ram(4))),
			[]string{"wait b busy 1 since=0s need=4 free=0 holders=p busy-since=5s", "admit p"}, at(30)},
		{"fair_wait off (0): a busy model never drains for a load, and no timer is armed for it",
			fairOff(state(600, 4, q("b"), busy(used(mod("a", Loaded, ram(4)), 599)), off("b", ram(4)))),
			[]string{"wait b busy 1 since=0s need=4 free=0 holders=a busy-since=600s"}, never},
		{"fair_wait off (0): a serving model is kept while its clients come back, however long the load waited",
			fairOff(linger(state(600, 4, q("b"), used(mod("a", Loaded, ram(4)), 600), off("b", ram(4))))),
			[]string{"wait b busy 1 since=0s need=4 free=0 holders=a busy-since=600s"}, at(602)},
	}
	runPlanRows(t, rows)
}

// Turn (Plan 5): a request waits its turn, and its queue deadline does not end it, only while the
// plan's own steps end its wait.
func TestPlanTurn(t *testing.T) {
	pinned := func(m Model) Model { m.Pinned = true; return m }
	fairOff := func(s State) State { s.FairWait = 0; return s }
	rows := []struct {
		name  string
		state State
		want  map[string]bool // each waiting model's Turn
	}{
		{"busy behind a model that drains at fair_wait; behind it, the next load",
			state(5, 4, q("b", "c"), busy(mod("a", Loaded, ram(4))), off("b", ram(4)), off("c", ram(4))), map[string]bool{"b": true, "c": true}},
		{"busy behind a model draining for it",
			state(40, 4, q("b"), busy(mod("a", Loaded, ram(4))), off("b", ram(4))), map[string]bool{"b": true}},
		{"memory being freed, a load and a stop under way",
			state(5, 8, q("b", "l", "s"), used(mod("a", Loaded, ram(4)), 0), off("b", ram(4)), mod("l", Loading, ram(2)), mod("s", Stopping, ram(2))), map[string]bool{"b": true, "l": true, "s": true}},
		{"behind a pinned model: nothing the plan does ends it, and nothing behind it either",
			state(5, 4, q("b", "c"), pinned(busy(mod("p", Loaded, ram(4)))), off("b", ram(4)), off("c", ram(4))), map[string]bool{"b": false, "c": false}},
		{"fair_wait off: a busy model is never drained for it",
			fairOff(state(5, 4, q("b"), busy(mod("a", Loaded, ram(4))), off("b", ram(4)))), map[string]bool{"b": false}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			steps, _ := Plan(r.state)
			got := map[string]bool{}
			for _, st := range steps {
				if st.Op == OpWait {
					got[st.Model] = st.Wait.Turn
				}
			}
			if !reflect.DeepEqual(got, r.want) {
				t.Errorf("turns %v, want %v", got, r.want)
			}
		})
	}
}
