package metrics

import (
	"time"

	"github.com/llamatray/llamatray/router/engine"
)

// feed turns the engine's state events into load, unload and sleep counts. Only Watch's goroutine
// uses it, so it needs no lock.
type feed struct {
	m       *Metrics
	state   map[string]engine.State // each model's last state seen; absent before its first event
	loading map[string]time.Time    // when each loading model's load started, by its event's time
}

func newFeed(m *Metrics) *feed {
	return &feed{m: m, state: map[string]engine.State{}, loading: map[string]time.Time{}}
}

// event applies one engine event. Only "state" events move a model; a model first seen in a state
// other than loading counts nothing for the move into it (its start was before the subscription).
func (f *feed) event(ev engine.Event) {
	if ev.Kind != "state" || ev.Model == "" {
		return
	}
	prev, seen := f.state[ev.Model]
	next := ev.State
	f.state[ev.Model] = next
	if seen && prev == next {
		return // progress, a pin, a drain: no move
	}
	m, id := f.m, ev.Model
	if prev == engine.StateLoading {
		start, ok := f.loading[id]
		delete(f.loading, id)
		switch next {
		case engine.StateLoaded, engine.StateSleeping:
			m.loads.WithLabelValues(id, "loaded").Inc()
			if ok && !ev.Time.Before(start) {
				m.loadSeconds.WithLabelValues(id).Observe(ev.Time.Sub(start).Seconds())
			}
		case engine.StateFailed:
			m.loads.WithLabelValues(id, "failed").Inc()
		default:
			m.loads.WithLabelValues(id, "stopped").Inc()
		}
	}
	switch next {
	case engine.StateLoading:
		f.loading[id] = ev.Time
	case engine.StateStopping:
		m.unloads.WithLabelValues(id, stopReason(ev.Cause)).Inc()
	case engine.StateSleeping:
		m.sleeps.WithLabelValues(id, "idle").Inc()
	case engine.StateFailed:
		if prev == engine.StateLoaded || prev == engine.StateSleeping {
			m.unloads.WithLabelValues(id, "crashed").Inc()
		}
	case engine.StateUnloaded:
		if prev == engine.StateLoaded || prev == engine.StateSleeping {
			m.unloads.WithLabelValues(id, "other").Inc() // its child ended without being stopped
		}
	}
}

// stopReason maps the cause of the engine's event into stopping to a reason label.
func stopReason(c engine.Cause) string {
	switch c {
	case engine.CauseIdle:
		return "idle"
	case engine.CausePressure:
		return "memory_pressure"
	case engine.CauseEvicted, engine.CauseFairWait:
		return "evicted"
	case engine.CauseAsked, engine.CauseForced:
		return "asked"
	case engine.CauseOverLimit:
		return "over_limit"
	case engine.CauseShutdown:
		return "shutdown"
	}
	return "other"
}
