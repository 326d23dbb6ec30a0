package peer

import (
	"time"

	"github.com/llamatray/llamatray/router/internal/backoff"
)

// Backoff is the wait after a failed read that followed a wait of last: MinBackoff after a
// success (last 0) or at first, else last doubled, at most MaxBackoff.
func Backoff(last time.Duration, o Options) time.Duration {
	return backoff.Next(last, o.MinBackoff, o.MaxBackoff)
}
