package sched

import (
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
