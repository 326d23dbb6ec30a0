// Package backoff is the one rule for waiting longer after each failure in a row: a base wait,
// doubled each time, never above a ceiling. The engine's retries of a failed model, the peers' and
// the discovery's reads, the worker's rpc-server restarts and accept retries all use it.
package backoff

import "time"

// Doubling is base doubled n times (base for n ≤ 0), at most max: the wait after the n-th
// failure in a row counted from 0.
func Doubling(base, max time.Duration, n int) time.Duration {
	d := base
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// Next is the wait that follows one of last: base when last is below it (the first failure, or
// after a success), else last doubled, at most max.
func Next(last, base, max time.Duration) time.Duration {
	if last < base {
		return base
	}
	return min(last*2, max)
}
