package main

import (
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/engine"
)

// evs numbers synthetic engine events as the engine would (Seq, 10 ms apart).
func evs(list ...engine.Event) []engine.Event {
	t0 := time.Unix(1_700_000_000, 0)
	for i := range list {
		list[i].Seq = uint64(i + 1)
		list[i].Time = t0.Add(time.Duration(i) * 10 * time.Millisecond)
	}
	return list
}

func queued(id string, st engine.State, n int) engine.Event {
	return engine.Event{Kind: engine.EventQueue, Model: id, State: st, Queued: n}
}

func state(id string, st engine.State, c engine.Cause, forModel ...string) engine.Event {
	ev := engine.Event{Kind: engine.EventState, Model: id, State: st, Cause: c}
	if len(forModel) > 0 {
		ev.For = forModel[0]
	}
	return ev
}

func lease(id string, st engine.State, active int) engine.Event {
	return engine.Event{Kind: engine.EventLease, Model: id, State: st, Active: active}
}

const (
	unloaded = engine.StateUnloaded
	loading  = engine.StateLoading
	loaded   = engine.StateLoaded
	sleeping = engine.StateSleeping
	stopping = engine.StateStopping
)

func TestCheckQueue(t *testing.T) {
	cases := []struct {
		name   string
		events []engine.Event
		want   []string // substrings of the violations, in order; none = clean
	}{
		{"in order", evs(
			queued("a", unloaded, 1), queued("b", unloaded, 1),
			state("a", loading, ""), state("b", loading, ""),
			state("a", loaded, ""), lease("a", loaded, 1), queued("a", loaded, 0),
			state("b", loaded, ""), lease("b", loaded, 1), queued("b", loaded, 0),
		), nil},
		{"a later model loads while the earlier waits for a worker another model uses", evs(
			queued("a", unloaded, 1), engine.Event{Kind: engine.EventQueue, Model: "a", State: unloaded, Queued: 1, Wait: engine.WaitWorker, Position: 1},
			queued("b", unloaded, 1),
			state("b", loading, ""), // by design (sched Plan 5.6): a's wait holds up no other load
			state("b", loaded, ""), lease("b", loaded, 1), queued("b", loaded, 0),
			engine.Event{Kind: engine.EventQueue, Model: "a", State: unloaded, Queued: 1, Wait: engine.WaitMemory, Position: 1},
			queued("c", unloaded, 1),
			state("c", loading, ""), // a now waits for memory: c jumped the line
		), []string{"FIFO: c started loading"}},
		{"a later model loads first while the earlier is blocked", evs(
			queued("a", unloaded, 1), queued("b", unloaded, 1),
			state("b", loading, ""), // a waits, nothing stops for it: b jumped the line
			state("a", loading, ""),
		), []string{"FIFO: b started loading", "ahead of a"}},
		{"a later sleeper woken while the earlier is blocked", evs(
			state("s", sleeping, ""),
			queued("a", unloaded, 1), queued("s", sleeping, 1),
			lease("s", sleeping, 1), queued("s", sleeping, 0),
		), []string{"FIFO: s was woken", "ahead of a"}},
		{"a later model starts beside the earlier one's victims stopping", evs(
			state("v", loaded, ""),
			queued("a", unloaded, 1), state("v", stopping, engine.CauseEvicted, "a"), queued("b", unloaded, 1),
			state("b", loading, ""), state("v", unloaded, ""), state("a", loading, ""),
		), nil},
		{"the engine's wait reasons are no queue lengths", evs(
			queued("a", unloaded, 1), engine.Event{Kind: engine.EventQueue, Model: "a", State: unloaded, Queued: 1, Wait: engine.WaitBusy, Position: 1},
			state("a", loading, ""),
		), nil},
		{"the earlier waiter timed out first", evs(
			queued("a", unloaded, 1), queued("b", unloaded, 1),
			queued("a", unloaded, 0), state("b", loading, ""),
		), nil},
		{"the earlier one is already loading", evs(
			queued("a", unloaded, 1), state("a", loading, ""), queued("b", unloaded, 1), state("b", loading, ""),
		), nil},
		{"a second request does not move a model's place in line", evs(
			queued("a", unloaded, 1), queued("b", unloaded, 1), queued("a", unloaded, 2),
			state("b", loading, ""),
		), []string{"FIFO: b started loading"}},
		{"the oldest waiter leaves: the model's place moves back", evs(
			queued("a", unloaded, 1), queued("b", unloaded, 1), queued("a", unloaded, 2), queued("a", unloaded, 1),
			state("b", loading, ""),
		), nil},
		{"a queued sleeper woken", evs(
			state("s", sleeping, ""), queued("s", sleeping, 1), lease("s", sleeping, 1), queued("s", sleeping, 0), state("s", loaded, engine.CauseWoke),
		), nil},
		{"a queued sleeper idle-unloaded", evs(
			state("s", sleeping, ""), queued("s", sleeping, 1), state("s", stopping, engine.CauseIdle),
		), []string{"sleeper killed: s"}},
		{"a queued sleeper stopped for pressure", evs(
			state("s", sleeping, ""), queued("s", sleeping, 2), state("s", stopping, engine.CausePressure),
		), []string{"sleeper killed: s, asleep with 2 queued"}},
		{"a queued sleeper evicted for a model queued after it", evs(
			state("s", sleeping, ""), queued("s", sleeping, 1), queued("a", unloaded, 1), state("s", stopping, engine.CauseEvicted, "a"),
		), []string{"sleeper killed: s"}},
		{"a queued sleeper evicted for a model queued before it", evs(
			state("s", sleeping, ""), queued("a", unloaded, 1), queued("s", sleeping, 1),
			state("s", stopping, engine.CauseEvicted, "a"), state("s", unloaded, ""), state("a", loading, ""),
		), nil},
		{"a sleeper without waiters may go", evs(
			state("s", sleeping, ""), queued("s", sleeping, 1), lease("s", sleeping, 1), queued("s", sleeping, 0),
			state("s", loaded, engine.CauseWoke), lease("s", loaded, 0), state("s", sleeping, ""), state("s", stopping, engine.CauseIdle),
		), nil},
		{"lost events", evs(engine.Event{Kind: engine.EventResync}), []string{"lost events"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := checkQueue(c.events)
			if len(c.want) == 0 {
				if len(got) > 0 {
					t.Fatalf("violations %q, want none", got)
				}
				return
			}
			all := strings.Join(got, "\n")
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("violations %q, want one with %q", got, w)
				}
			}
		})
	}
}

// The figures say what the checks saw: admissions of models that waited for memory, those with an
// earlier one still waiting (its memory on its way), and queued sleepers woken.
func TestCheckQueueStats(t *testing.T) {
	_, st := checkQueue(evs(
		state("v", loaded, ""), state("s", sleeping, ""),
		queued("a", unloaded, 1), state("v", stopping, engine.CauseEvicted, "a"), queued("b", unloaded, 1),
		state("b", loading, ""), state("v", unloaded, ""), state("a", loading, ""),
		queued("s", sleeping, 1), lease("s", sleeping, 1), queued("s", sleeping, 0),
	))
	if st != (queueStats{admitted: 3, behind: 1, sleepersWok: 1}) {
		t.Fatalf("stats %+v", st)
	}
}
