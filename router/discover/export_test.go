package discover

import (
	"time"

	"github.com/llamatray/llamatray/router/internal/backoff"
)

// nextWait is the wait before the next look: every, doubled for each failure in a row, at most max.
func nextWait(every, max time.Duration, failures int) time.Duration {
	return backoff.Doubling(every, max, failures)
}
