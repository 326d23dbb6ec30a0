package app

import (
	"fmt"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/view"
)

// humanBytes is the one size format: config.HumanSize ("812 MiB", "4.1 GiB").
var humanBytes = config.HumanSize

// waitText says why the model's queued requests wait, in the words of every surface (view.WaitText),
// "" when none waits or when its own load is what they wait for (its state says "loading 40%").
func waitText(m Model) string {
	if m.Wait == nil || m.Wait.Kind == service.WaitLoading {
		return ""
	}
	return view.WaitText(m.ModelStatus)
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
