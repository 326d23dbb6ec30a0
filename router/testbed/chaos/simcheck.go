package main

import (
	"fmt"
	"time"

	"github.com/llamatray/llamatray/router/engine"
)

// The queue checks of a simulated run, read from the engine's events in their order (Seq). The
// engine publishes a "queue" event ("2 queued") at every change of a model's queue length, so each
// model's waiters can be followed: a rise adds waiters at the end, a fall takes the oldest (a
// deadline or an error ends the oldest first; the sim's clients never leave before their answer).
//
// A model waits for memory while it has waiters and no child that can serve them: unloaded, failed
// past its retry time, or sleeping (a wake needs memory back), and not draining. Its place in line
// is its oldest waiter's, which is the order the engine serves models in. It is admitted when it
// gets memory: it starts loading, or a waiter of it is granted a lease while it sleeps (a wake).
//
// FIFO among waiters for memory: when a model that waited for memory is admitted, no model ahead of
// it in line still waits for memory unless some model is stopping then. The engine may start a
// later model beside an earlier one only when the earlier one's memory is on its way (its victims,
// or another model, stopping: sched.Fit's Wait and Victims); when the earlier one is blocked,
// every later load waits behind it.
//
// Queued sleepers woken, not killed: a sleeping model with waiters is never stopped (not idle, not
// for pressure, not over a limit), except evicted for a model ahead of it in line.

// queueModel is what the events say of one model.
type queueModel struct {
	state    engine.State
	active   int
	draining bool
	waiters  []uint64 // Seq of the queue event that added each waiter, oldest first
	admitted bool     // admitted since its waiters began waiting
	// forWorker: the engine's latest reason for its wait is a worker another model uses (sched
	// Plan 5.6), a wait that does not hold up later loads that need other workers or none.
	forWorker bool
}

// waitsForMemory is whether m waits for memory now.
func (m *queueModel) waitsForMemory() bool {
	if len(m.waiters) == 0 || m.admitted || m.draining || m.forWorker {
		return false
	}
	switch m.state {
	case "", engine.StateUnloaded, engine.StateFailed, engine.StateSleeping:
		return true
	}
	return false
}

// queueStats say how much the queue checks saw, so a clean run is not an empty one.
type queueStats struct {
	admitted    int // admissions of models that waited for memory
	behind      int // of them, with a model ahead in line still waiting (memory on its way: something stopping)
	sleepersWok int // wakes of sleeping models that had waiters
}

// checkQueue reads a run's events and lists every breach of the two rules.
func checkQueue(events []engine.Event) ([]string, queueStats) {
	var st queueStats
	models := map[string]*queueModel{}
	get := func(id string) *queueModel {
		m := models[id]
		if m == nil {
			m = &queueModel{}
			models[id] = m
		}
		return m
	}
	var start time.Time
	at := func(ev engine.Event) string {
		return fmt.Sprintf("seq %d, %s into the run", ev.Seq, ev.Time.Sub(start).Round(time.Millisecond))
	}
	var out []string
	stopping := func() bool {
		for _, m := range models {
			if m.state == engine.StateStopping {
				return true
			}
		}
		return false
	}
	// admit records b's admission at ev and checks no model ahead of it still waits for memory.
	admit := func(id string, b *queueModel, ev engine.Event, how string) {
		if !b.waitsForMemory() {
			return
		}
		b.admitted = true
		st.admitted++
		if b.state == engine.StateSleeping {
			st.sleepersWok++
		}
		ahead := false
		for aid, a := range models {
			if aid == id || !a.waitsForMemory() || a.waiters[0] > b.waiters[0] {
				continue
			}
			ahead = true
			if !stopping() {
				out = append(out, fmt.Sprintf("FIFO: %s %s (%s) ahead of %s, queued for memory before it (waiter seq %d < %d), while nothing was stopping to make room for %s",
					id, how, at(ev), aid, a.waiters[0], b.waiters[0], aid))
			}
		}
		if ahead {
			st.behind++
		}
	}
	for i, ev := range events {
		if i == 0 {
			start = ev.Time
		}
		if ev.Kind == engine.EventResync {
			out = append(out, fmt.Sprintf("the event subscription lost events (%s): the queue checks are incomplete", at(ev)))
			continue
		}
		if ev.Model == "" {
			continue
		}
		m := get(ev.Model)
		switch ev.Kind {
		case engine.EventQueue:
			if ev.Wait != "" {
				// Why it waits, as the engine says: the checks judge by what happens instead, but
				// for a worker's wait, which by design holds up no other load.
				m.forWorker = ev.Wait == engine.WaitWorker
				continue
			}
			n := ev.Queued
			if n < 0 {
				out = append(out, fmt.Sprintf("queue event of %s with %d queued (%s)", ev.Model, n, at(ev)))
				continue
			}
			for len(m.waiters) < n {
				m.waiters = append(m.waiters, ev.Seq)
			}
			if len(m.waiters) > n {
				m.waiters = append(m.waiters[:0], m.waiters[len(m.waiters)-n:]...)
			}
			if n == 0 {
				m.admitted, m.forWorker = false, false
			}
		case engine.EventLease:
			if ev.Active > m.active && ev.State == engine.StateSleeping {
				admit(ev.Model, m, ev, "was woken")
			}
			m.active = ev.Active
		case engine.EventState:
			switch ev.Cause {
			case engine.CauseFairWait:
				m.draining = true
			case engine.CauseDrainOff:
				m.draining = false
			}
			if ev.State == engine.StateStopping && m.state == engine.StateSleeping && len(m.waiters) > 0 {
				evicted := ev.Cause == engine.CauseEvicted
				if w := models[ev.For]; !evicted || w == nil || len(w.waiters) == 0 || w.waiters[0] > m.waiters[0] {
					out = append(out, fmt.Sprintf("sleeper killed: %s, asleep with %d queued (oldest seq %d), was stopped (%q, %s) instead of woken",
						ev.Model, len(m.waiters), m.waiters[0], ev.Message, at(ev)))
				}
			}
			if ev.State == engine.StateLoading && m.state != engine.StateLoading {
				admit(ev.Model, m, ev, "started loading")
			}
			if ev.State != m.state {
				switch ev.State {
				case engine.StateStopping, engine.StateUnloaded, engine.StateFailed:
					m.admitted = false // its waiters, if any, wait for memory again
					m.draining = m.draining && ev.State == engine.StateStopping
				}
			}
			m.state = ev.State
			m.active = ev.Active
		}
	}
	return out, st
}
