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
}

func newThrottle(interval time.Duration, fn func()) *throttle {
	return &throttle{interval: interval, kick: make(chan struct{}, 1), fn: fn}
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
		if wait := t.interval - time.Since(last); !last.IsZero() && wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
		}
		// Kicks that came in while waiting are served by this run.
		select {
		case <-t.kick:
		default:
		}
		last = time.Now()
		t.fn()
	}
}
