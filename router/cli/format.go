package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/llamatray/llamatray/router/config"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func readFileOrEmpty(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return b
}

// humanBytes prints a size with binary units: 512 B, 1.5 KiB, 4.1 GiB.
func humanBytes(n int64) string {
	if n <= 0 {
		return "-"
	}
	return config.Size(n).Human()
}

// params prints a parameter count: 135M, 7.2B.
func params(n int64) string {
	switch {
	case n <= 0:
		return "-"
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0fK", float64(n)/1e3)
	}
	return fmt.Sprint(n)
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
