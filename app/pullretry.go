package app

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/hub"
)

// retryWaits are the waits before each resume of a download that failed for a passing reason (the
// network): after the last, the failure is the person's to retry.
var retryWaits = []time.Duration{2 * time.Second, 10 * time.Second, 30 * time.Second}

// pullRetry resumes downloads that failed for a passing reason, with a growing wait, before
// asking the person (the Downloads row's Retry). A download that ends, or fails for good, starts
// its count again.
type pullRetry struct {
	resume func(name string)               // goes on with a failed download (Backend.ResumePull)
	after  func(d time.Duration, f func()) // runs f once d has passed; tests replace it
	mu     sync.Mutex                      // guards tries
	tries  map[string]int                  // resumes made since the download last ran to its end, by model
}

func newPullRetry(b Backend) *pullRetry {
	return &pullRetry{
		resume: func(name string) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = b.ResumePull(ctx, name) // a failure comes back as the pull's own event
		},
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		tries: map[string]int{},
	}
}

// event follows a pull's event: a passing failure is resumed after the next wait.
func (r *pullRetry) event(ev hub.Event) {
	name := strings.ToLower(ev.Model)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case ev.State == hub.StateDownloaded || ev.State == hub.StateCancelled:
		delete(r.tries, name)
	case ev.State == hub.StateFailed && passing(ev.Error):
		n := r.tries[name]
		if n >= len(retryWaits) {
			return // left to the person
		}
		r.tries[name] = n + 1
		r.after(retryWaits[n], func() { r.resume(ev.Model) })
	}
}

// passing reports whether a download's error is the network's, which may pass: no answer, a
// broken connection, a timeout. A refusal (gated, not found, checksum) or a full disk is not.
func passing(err string) bool {
	return mentions(err, "cannot reach", "dial tcp", "connection reset", "broken pipe", "unexpected eof",
		"timeout", "did not answer", "network is unreachable", "http 502", "http 503", "http 504")
}
