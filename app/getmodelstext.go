package app

import (
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/fit"
	"github.com/llamatray/llamatray/router/hub"
)

// The words of Get models…: its results, quants, starters and download progress.

// shortName is a repo or model name short enough for a button of the results column: a long
// name keeps its start and end around an ellipsis.
func shortName(name string) string {
	const most = 48
	r := []rune(name)
	if len(r) <= most {
		return name
	}
	return string(r[:most/2-1]) + "…" + string(r[len(r)-most/2:])
}

// starterText is a starter in words: its use, why, its size and its fit here.
func starterText(s hub.StarterFit) string {
	return fmt.Sprintf("%s · %s · %s · %s", s.Use, s.Why, humanBytes(s.Size), fitText(s.QuantFit))
}

// repoLabel is what the Hub says of a search result, in words.
func repoLabel(r hub.Repo) string {
	var parts []string
	if r.Downloads > 0 {
		parts = append(parts, countText(r.Downloads, "download"))
	}
	if r.Likes > 0 {
		parts = append(parts, countText(r.Likes, "like"))
	}
	if t, err := time.Parse(time.RFC3339, r.Modified); err == nil {
		parts = append(parts, "updated "+t.Format("2 Jan 2006"))
	}
	if r.Gated {
		parts = append(parts, "gated: needs a token with access")
	}
	return strings.Join(parts, " · ")
}

// countText is a count for people: 950 downloads, 12.3k downloads, 4.1M downloads.
func countText(n int64, what string) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM %ss", float64(n)/1e6, what)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk %ss", float64(n)/1e3, what)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk %ss", float64(n)/1e3, what)
	}
	return plural(int(n), what)
}

// fitText is a fit badge in words.
func fitText(q hub.QuantFit) string {
	if t, ok := map[fit.Fit]string{fit.Now: "Fits now", fit.AfterUnload: "Fits after unloading other models",
		fit.TooLarge: "Too large for this machine"}[q.Fit]; ok {
		return t
	}
	return "Fit unknown"
}

// fitReason says what the badge is based on, in the window's units.
func fitReason(q hub.QuantFit) string {
	if q.Fit == "" || q.MemoryBytes <= 0 {
		return q.FitReason // why the fit is unknown
	}
	return "Needs about " + humanBytes(q.MemoryBytes) + " of memory to run (estimated from its header)."
}

func fitImportance(f fit.Fit) widget.Importance {
	switch f {
	case fit.Now:
		return widget.SuccessImportance
	case fit.TooLarge:
		return widget.DangerImportance
	}
	return widget.WarningImportance
}

// pullText is one line of a download's progress: bytes, rate and time left.
func pullText(ev hub.Event) string {
	p := ev.Progress
	s := fmt.Sprintf("Downloading %s: %s of %s", ev.Model, humanBytes(p.Done), humanBytes(p.Total))
	if p.Rate > 0 {
		s += fmt.Sprintf(", %s/s", humanBytes(int64(p.Rate)))
	}
	if p.Left > 0 {
		s += fmt.Sprintf(", %s left", p.Left.Round(time.Second))
	}
	return s
}
