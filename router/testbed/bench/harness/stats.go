package harness

import (
	"fmt"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 < p ≤ 100, nearest rank) of ds; 0 when ds is empty.
// ds is not modified.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

// Median is the 50th percentile.
func Median(ds []time.Duration) time.Duration { return Percentile(ds, 50) }

// Ms renders d in milliseconds with two decimals.
func Ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

// MiB renders a byte count in MiB with one decimal.
func MiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
