package cli

import (
	"time"

	"github.com/llamatray/llamatray/router/config"
)

// humanBytes prints a size in the one size format (config.HumanSize), "-" when there is none.
func humanBytes(n int64) string {
	if n <= 0 {
		return "-"
	}
	return config.HumanSize(n)
}

func bytesOr(measured, estimate int64) string {
	if measured > 0 {
		return humanBytes(measured)
	}
	if estimate > 0 {
		return "~" + humanBytes(estimate)
	}
	return "-"
}

func ago(now time.Time, t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return now.Sub(*t).Round(time.Second).String() + " ago"
}

func until(now time.Time, t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return "in " + t.Sub(now).Round(time.Second).String()
}
