package main

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed/bench/harness"
)

// eventLog keeps every engine event of a run, read from one subscription by one goroutine.
type eventLog struct {
	done chan struct{} // closed when the subscription ended

	mu     sync.Mutex // guards events
	events []engine.Event
}

// watchEvents subscribes to eng and records until the engine closes the subscription or cancel is
// called.
func watchEvents(eng *engine.Engine) (*eventLog, func()) {
	ch, cancel := eng.Subscribe()
	l := &eventLog{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for ev := range ch {
			l.mu.Lock()
			l.events = append(l.events, ev)
			l.mu.Unlock()
		}
	}()
	return l, cancel
}

// snapshot copies the events so far.
func (l *eventLog) snapshot() []engine.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// eventFacts is what the events of a run show.
type eventFacts struct {
	loads, evictions, drains, pressure, resyncs int
	maxRunning                                  int                    // models holding a process at once
	stoppingWithLease                           []engine.Event         // violations
	failedAt                                    map[string][]time.Time // "failed" state events by model
}

// analyze reads the events of a run.
func analyze(events []engine.Event) eventFacts {
	f := eventFacts{failedAt: map[string][]time.Time{}}
	state := map[string]engine.State{}
	for _, ev := range events {
		switch ev.Kind {
		case engine.EventResync:
			f.resyncs++
			continue
		case engine.EventPressure:
			f.pressure++
		case engine.EventState:
			switch {
			case ev.State == engine.StateLoading && ev.Cause == "":
				f.loads++
			case ev.State == engine.StateStopping && ev.Cause == engine.CauseEvicted:
				f.evictions++
			case ev.Cause == engine.CauseFairWait:
				f.drains++
			case ev.State == engine.StateFailed:
				f.failedAt[ev.Model] = append(f.failedAt[ev.Model], ev.Time)
			}
			if ev.State == engine.StateStopping && ev.Active > 0 && ev.Cause != engine.CauseForced {
				f.stoppingWithLease = append(f.stoppingWithLease, ev)
			}
		}
		if ev.Model == "" || ev.State == "" {
			continue
		}
		state[ev.Model] = ev.State
		n := 0
		for _, s := range state {
			if s.Running() {
				n++
			}
		}
		f.maxRunning = max(f.maxRunning, n)
	}
	return f
}

// failedAfter is the first time model turned failed at or after t, or the zero time.
func (f eventFacts) failedAfter(model string, t time.Time) time.Time {
	for _, at := range f.failedAt[model] {
		if !at.Before(t) {
			return at
		}
	}
	return time.Time{}
}

// pidTracker remembers every llama-server PID seen while a run goes on: from the engine's snapshots
// and from this process's children.
type pidTracker struct {
	done chan struct{}

	mu   sync.Mutex // guards pids
	pids map[int]string
}

// trackPIDs polls every 20 ms (children of this process every 200 ms) until ctx ends.
func trackPIDs(ctx context.Context, eng *engine.Engine) *pidTracker {
	t := &pidTracker{done: make(chan struct{}), pids: map[int]string{}}
	self := os.Getpid()
	go func() {
		defer close(t.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			seen := map[int]string{}
			for _, m := range eng.Models() {
				if m.PID > 0 {
					seen[m.PID] = m.ID
				}
			}
			if i%10 == 0 {
				for _, pid := range harness.ChildrenOf(self) {
					if _, ok := seen[pid]; !ok {
						seen[pid] = "child process"
					}
				}
			}
			t.add(seen)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return t
}

func (t *pidTracker) add(seen map[int]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for pid, who := range seen {
		if _, ok := t.pids[pid]; !ok || t.pids[pid] == "child process" {
			t.pids[pid] = who
		}
	}
}

// all copies the PIDs seen.
func (t *pidTracker) all() map[int]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[int]string, len(t.pids))
	for k, v := range t.pids {
		out[k] = v
	}
	return out
}

// accessLog is a slog handler that passes every record on and keeps the router's access-log
// records ("request") by request ID: queue wait and status.
type accessLog struct {
	next slog.Handler
	s    *accessStore
}

type accessEntry struct {
	wait   time.Duration
	status int
	model  string
}

type accessStore struct {
	mu      sync.Mutex // guards entries
	entries map[string]accessEntry
}

func newAccessLog(next slog.Handler) *accessLog {
	return &accessLog{next: next, s: &accessStore{entries: map[string]accessEntry{}}}
}

func (h *accessLog) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.next.Enabled(ctx, l)
}

func (h *accessLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "request" {
		var id string
		var e accessEntry
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "request_id":
				id = a.Value.String()
			case "queue_wait":
				e.wait = a.Value.Duration()
			case "status":
				e.status = int(a.Value.Int64())
			case "model":
				e.model = a.Value.String()
			}
			return true
		})
		if id != "" {
			h.s.mu.Lock()
			h.s.entries[id] = e
			h.s.mu.Unlock()
		}
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *accessLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &accessLog{next: h.next.WithAttrs(as), s: h.s}
}

func (h *accessLog) WithGroup(name string) slog.Handler {
	return &accessLog{next: h.next.WithGroup(name), s: h.s}
}

// get returns the access-log entry of a request ID.
func (h *accessLog) get(id string) (accessEntry, bool) {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	e, ok := h.s.entries[id]
	return e, ok
}

// waits lists the queue wait of every answered (200) model request logged so far.
func (h *accessLog) waits() []time.Duration {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	var out []time.Duration
	for _, e := range h.s.entries {
		if e.status == 200 && e.model != "" {
			out = append(out, e.wait)
		}
	}
	return out
}
