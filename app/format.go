package app

import (
	"fmt"
	"time"
)

// humanBytes formats a byte count in decimal units: "812 MB", "4.1 GB".
func humanBytes(n int64) string {
	const (
		kb = 1000
		mb = kb * 1000
		gb = mb * 1000
		tb = gb * 1000
	)
	switch {
	case n >= tb:
		return fmt.Sprintf("%.1f TB", float64(n)/tb)
	case n >= 10*gb:
		return fmt.Sprintf("%.0f GB", float64(n)/gb)
	case n >= gb:
		return fmt.Sprintf("%.1f GB", float64(n)/gb)
	case n >= mb:
		return fmt.Sprintf("%.0f MB", float64(n)/mb)
	case n >= kb:
		return fmt.Sprintf("%.0f kB", float64(n)/kb)
	}
	return fmt.Sprintf("%d B", n)
}

// ago formats how long ago t was: "just now", "5 min ago", "3 h ago", "2 days ago"; "never" for zero.
func ago(t, at time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := at.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%d days ago", int(d/(24*time.Hour)))
}

// plural returns "1 model", "2 models".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
