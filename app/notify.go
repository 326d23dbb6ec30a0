package app

import (
	"cmp"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/service"
)

// note is a notification to show: a title and a body.
type note struct{ Title, Body string }

// pressureQuiet is how long after a memory-pressure notification further unloads stay silent.
const pressureQuiet = 30 * time.Second

// failQuiet is how long after a model's failure notification its further failures stay silent,
// so automatic retries do not repeat it.
const failQuiet = 5 * time.Minute

// notifier decides which engine events become notifications. It is used from one goroutine.
type notifier struct {
	lastPressure time.Time
	pressureHeld []string             // models unloaded while quiet, named in the next notification
	lastFailed   map[string]time.Time // model → when its failure was last notified
}

func newNotifier() *notifier { return &notifier{lastFailed: map[string]time.Time{}} }

// event returns the notification for ev at time at, if any.
func (n *notifier) event(ev service.Event, at time.Time) (note, bool) {
	switch {
	case ev.Kind == service.EventPressure:
		if !n.lastPressure.IsZero() && at.Sub(n.lastPressure) < pressureQuiet {
			n.pressureHeld = append(n.pressureHeld, ev.Model)
			return note{}, false
		}
		n.lastPressure = at
		body := "Unloaded " + ev.Model + " to free memory for other programs."
		if len(n.pressureHeld) > 0 {
			body += " Earlier: " + joinNames(n.pressureHeld) + "."
			n.pressureHeld = nil
		}
		return note{Title: "Memory is low", Body: body}, true
	case ev.Kind == service.EventState && ev.State == service.StateFailed:
		if last, ok := n.lastFailed[ev.Model]; ok && at.Sub(last) < failQuiet {
			return note{}, false
		}
		n.lastFailed[ev.Model] = at
		return note{Title: "Model " + ev.Model + " failed", Body: cmp.Or(ev.Message, "See its logs in Llamatray.")}, true
	case ev.Kind == service.EventState && ev.State == service.StateLoaded:
		delete(n.lastFailed, ev.Model) // a success re-arms the failure notification
	}
	return note{}, false
}

// startupNotes are the problems worth a notification when the app starts.
func startupNotes(s Snapshot) []note {
	var out []note
	if s.Server.Path == "" {
		body := "Models cannot be loaded until llama-server is installed."
		if s.Server.Hint != "" {
			body += " " + s.Server.Hint
		}
		out = append(out, note{Title: "llama-server not found", Body: body})
	}
	if s.ListenErr != "" {
		out = append(out, note{Title: "Llamatray is not serving", Body: s.ListenErr + ". Change the port in Settings."})
	}
	return out
}

func joinNames(names []string) string {
	const most = 5
	if len(names) > most {
		return strings.Join(names[:most], ", ") + " and " + plural(len(names)-most, "other")
	}
	return strings.Join(names, ", ")
}
