package app

import (
	"context"
	"time"
)

// throttle coalesces kicks: after a kick, fn runs once, and runs start at least interval apart. Kicks
// that arrive while fn waits or runs are folded into one more run, so the last kick is always
// followed by a run. fn runs on the throttle's goroutine, never concurrently with itself.
type throttle struct {
	interval time.Duration
	kick     chan struct{} // capacity 1: a pending kick
	fn       func()

	// The clock, replaced in tests: now reads it, after fires once d has passed.
	now   func() time.Time
	after func(d time.Duration) <-chan time.Time
}

func newThrottle(interval time.Duration, fn func()) *throttle {
	return &throttle{interval: interval, kick: make(chan struct{}, 1), fn: fn, now: time.Now, after: time.After}
}

// Kick asks for a run. It never blocks.
func (t *throttle) Kick() {
	select {
	case t.kick <- struct{}{}:
	default: // a run is already pending
	}
}

// run serves kicks until ctx ends.
func (t *throttle) run(ctx context.Context) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.kick:
		}
		if wait := t.interval - t.now().Sub(last); !last.IsZero() && wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-t.after(wait):
			}
		}
		// Kicks that came in while waiting are served by this run.
		select {
		case <-t.kick:
		default:
		}
		last = t.now()
		t.fn()
	}
}
