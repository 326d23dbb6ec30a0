package sched

import (
	"testing"
	"time"
)

// on gives m the workers ws.
func on(m Model, ws ...string) Model { m.Workers = ws; return m }

// TestPlanWorkerRows are Plan's rows for 5.6: a worker serves one model at a time.
func TestPlanWorkerRows(t *testing.T) {
	never := time.Time{}
	rows := []planRow{
		{"a model on free workers starts",
			state(0, 8, q("a"), on(off("a", ram(1)), "w1", "w2")),
			[]string{"start a", "wait a loading 1 since=0s need=1 free=7"}, never},
		{"a worker used by a busy model: the load waits, naming the worker and the model",
			state(0, 8, q("b"), on(busy(mod("a", Loaded, ram(1))), "w1"), on(off("b", ram(1)), "w2", "w1")),
			[]string{"wait b worker 1 since=0s need=1 free=7 holders=a worker=w1"}, never},
		{"a worker used by a loading model: the load waits for it",
			state(0, 8, q("a", "b"), on(mod("a", Loading, ram(1)), "w1"), on(off("b", ram(1)), "w1")),
			[]string{"wait a loading 1 since=0s need=1 free=7", "wait b worker 2 since=1s need=1 free=7 holders=a worker=w1"}, never},
		{"a worker used by an idle model: that model is evicted for the load, which waits for it",
			state(0, 8, q("b"), on(mod("a", Loaded, ram(1)), "w1"), on(off("b", ram(1)), "w1")),
			[]string{"stop a evicted for b", "wait b worker 1 since=0s need=1 free=7 victims=a holders=a worker=w1"}, never},
		{"an idle sleeper on the worker is evicted too",
			state(0, 8, q("b"), on(mod("a", Sleeping, ram(1)), "w1"), on(off("b", ram(1)), "w1")),
			[]string{"stop a evicted for b", "wait b worker 1 since=0s need=1 free=7 victims=a holders=a worker=w1"}, never},
		{"a pinned idle model keeps its worker: the load waits",
			state(0, 8, q("b"), on(with(mod("a", Loaded, ram(1)), func(m *Model) { m.Pinned = true }), "w1"), on(off("b", ram(1)), "w1")),
			[]string{"wait b worker 1 since=0s need=1 free=7 holders=a worker=w1"}, never},
		{"an idle model with requests queued for it keeps its worker",
			state(0, 8, q("a", "b"), on(mod("a", Loaded, ram(1)), "w1"), on(off("b", ram(1)), "w1")),
			[]string{"admit a", "wait b worker 1 since=1s need=1 free=7 holders=a worker=w1"}, never},
		{"a model stopping on the worker: the load waits for it to be gone",
			state(0, 8, q("b"), on(mod("a", Stopping, ram(1)), "w1"), on(off("b", ram(1)), "w1")),
			[]string{"wait b worker 1 since=0s need=1 free=7 victims=a holders=a worker=w1"}, never},
		{"the first of two queued loads for one worker claims it; the second waits behind it",
			state(0, 8, q("a", "b"), on(off("a", ram(1)), "w1"), on(off("b", ram(1)), "w1")),
			[]string{"start a", "wait a loading 1 since=0s need=1 free=7", "wait b worker 2 since=1s need=1 free=7 holders=a worker=w1"}, never},
		{"a claim holds while its load waits for memory: a later load for the same worker does not jump it",
			state(0, 4, q("a", "b"), busy(mod("x", Loaded, ram(3))), on(off("a", ram(2)), "w1"), on(off("b", ram(1)), "w1")),
			[]string{"wait a busy 1 since=0s need=2 free=1 holders=x busy-since=0s drain-at=30s", "wait b behind 2 since=1s need=1 free=1 behind=a"}, at(30)},
		{"a load waiting for one of its workers claims the others: a later load for those waits behind it",
			state(0, 8, q("b", "c"), on(busy(mod("a", Loaded, ram(1))), "w1"), on(off("b", ram(1)), "w1", "w2"), on(off("c", ram(1)), "w2")),
			[]string{"wait b worker 1 since=0s need=1 free=7 holders=a worker=w1", "wait c worker 2 since=1s need=1 free=7 holders=b worker=w2"}, never},
		{"a worker wait does not block a later load that needs no worker",
			state(0, 8, q("b", "c"), on(busy(mod("a", Loaded, ram(1))), "w1"), on(off("b", ram(1)), "w1"), off("c", ram(1))),
			[]string{"wait b worker 1 since=0s need=1 free=7 holders=a worker=w1", "start c", "wait c loading 2 since=1s need=1 free=6"}, never},
		{"the model on the worker itself is not kept waiting by its own claim",
			state(0, 8, q("a"), on(mod("a", Loaded, ram(1)), "w1")),
			[]string{"admit a"}, never},
		{"a load too large for the ceiling is refused at once, not kept waiting for its worker",
			state(0, 8, q("b"), on(busy(mod("a", Loaded, ram(1))), "w1"), on(off("b", ram(9)), "w1")),
			[]string{"fail b too-large 9"}, never},
		{"a failed model's worker is free",
			state(5, 8, q("b"), on(with(mod("a", Failed, Mem{}), func(m *Model) { m.RetryAt = at(60) }), "w1"), on(off("b", ram(1)), "w1")),
			[]string{"start b", "wait b loading 1 since=0s need=1 free=7"}, never},
	}
	runPlanRows(t, rows)
}
