package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/config"
)

// progressBar draws a download's progress on a terminal (one line redrawn in place) or, on
// anything else, one line per tenth done.
type progressBar struct {
	w       io.Writer
	tty     bool
	drawn   bool
	lastTen int64
	lastAt  time.Time
}

func newProgressBar(w io.Writer) *progressBar {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progressBar{w: w, tty: tty, lastTen: -1}
}

// progressLine renders one progress line: bar, percent, bytes, rate and time left.
func progressLine(name string, done, total int64, rate float64, left time.Duration) string {
	const width = 24
	frac := 0.0
	if total > 0 {
		frac = min(float64(done)/float64(total), 1)
	}
	n := int(frac * width)
	bar := strings.Repeat("=", n) + strings.Repeat(" ", width-n)
	line := fmt.Sprintf("%s [%s] %3.0f%% %s / %s", name, bar, frac*100, config.HumanSize(done), config.HumanSize(total))
	if rate > 0 {
		line += fmt.Sprintf("  %s/s", config.HumanSize(int64(rate)))
	}
	if left > 0 {
		line += fmt.Sprintf("  %s left", left.Round(time.Second))
	}
	return line
}

func (b *progressBar) show(name string, done, total int64, rate float64, left time.Duration) {
	line := progressLine(name, done, total, rate, left)
	if b.tty {
		if time.Since(b.lastAt) < 100*time.Millisecond && done < total {
			return
		}
		b.lastAt = time.Now()
		fmt.Fprintf(b.w, "\r%s\x1b[K", line)
		b.drawn = true
		return
	}
	ten := int64(0)
	if total > 0 {
		ten = done * 10 / total
	}
	if ten != b.lastTen {
		b.lastTen = ten
		fmt.Fprintln(b.w, line)
	}
}

// done ends the redrawn line.
func (b *progressBar) done() {
	if b.tty && b.drawn {
		fmt.Fprintln(b.w)
		b.drawn = false
	}
}
