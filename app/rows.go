package app

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/view"
)

// rowView is what one model's row in the models window shows, as plain data.
type rowView struct {
	ID       string
	Group    Group
	Title    string    // "qwen-7b"
	State    string    // "loaded · pinned", "loading 42%", "failed"
	Detail   string    // "2 active · 4.1 GiB measured · ctx 4096 · Q4_K_M · 7B llama · used 5 min ago"
	Error    string    // why it failed, or why it cannot load
	Wait     string    // why its queued requests wait (view.WaitText), "" when none does
	Unsized  string    // why its memory need could not be sized (its file size stands for it), "" when it was
	Progress float64   // loading: 0..1, or -1 for a load without progress reports; else unused
	Loading  bool      // show a progress bar
	Failed   bool      // the last load failed; Error says why
	Draining bool      // unloading once its requests finish
	Buttons  []button  // shown on the row
	More     []button  // in the row's "more" menu
	Path     string    // model file, for Show in folder and Delete
	LastUsed time.Time // for ordering, not shown directly
}

// button is one row action.
type button struct {
	Label    string
	Action   rowAction
	Disabled bool
}

// rowAction is what a row button does: a menu action, or one of the file actions.
type rowAction struct {
	Action
	File fileAction
}

// fileAction is a model file operation, done by the window.
type fileAction int

const (
	fileNone     fileAction = iota
	fileReveal              // show the model file in the file manager
	fileDelete              // move the model's files to the trash, after confirmation
	fileSettings            // open the model's settings window
)

// groupTitles name the sections of the models window.
var groupTitles = [...]string{GroupLoaded: "Loaded", GroupSleeping: "Sleeping", GroupAvailable: "Available"}

// modelRows lays out the models window: the models whose ID, architecture or quantization contains
// filter (case-insensitive), grouped Loaded, Sleeping, Available, each group sorted by ID.
func modelRows(s Snapshot, filter string, at time.Time) []rowView {
	filter = strings.ToLower(strings.TrimSpace(filter))
	var groups [3][]rowView
	for _, m := range s.Models {
		e := m.Entry()
		if filter != "" && !strings.Contains(strings.ToLower(m.ID+" "+e.Architecture+" "+e.Quantization+" "+catalog.ParamsLabel(e.Parameters)), filter) {
			continue
		}
		r := rowFor(s.Budget, m, at)
		groups[r.Group] = append(groups[r.Group], r)
	}
	var out []rowView
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func rowFor(b service.Budget, m Model, at time.Time) rowView {
	r := rowView{ID: m.ID, Group: GroupOf(m), Title: m.ID, Path: m.Path, LastUsed: m.LastUsed, Draining: m.Draining,
		State: stateText(m), Wait: waitText(m), Detail: strings.Join(detailParts(m, at), " · ")}
	if e := m.Entry().EstimateError; e != "" && m.MemoryBytes == 0 {
		r.Unsized = e + " (its file size is taken as its need)"
	}
	id := m.ID
	act := func(k ActionKind) rowAction { return rowAction{Action: Action{Kind: k, Model: id}} }
	pin := button{Label: "Pin", Action: act(ActPin)}
	if m.Pinned {
		pin = button{Label: "Unpin", Action: act(ActUnpin)}
	}
	logs := button{Label: "Logs", Action: act(ActShowLogs)}
	force := button{Label: "Force unload", Action: act(ActForceUnload), Disabled: m.Active == 0 || m.State == service.StateStopping}
	copyID := button{Label: "Copy model ID", Action: rowAction{Action: Action{Kind: ActCopy, Text: id}}}
	reveal := button{Label: "Show in folder", Action: rowAction{File: fileReveal}, Disabled: m.Path == ""}
	del := button{Label: "Delete…", Action: rowAction{File: fileDelete}, Disabled: m.Path == "" || m.Running()}

	switch m.State {
	case service.StateLoading:
		r.Loading = true
		r.Progress = -1
		if m.Progress > 0 {
			r.Progress = m.Progress
		}
		r.Buttons = []button{{Label: "Cancel", Action: act(ActUnload)}, pin, logs}
	case service.StateStopping:
		r.Buttons = []button{{Label: "Stopping…", Disabled: true}, pin, logs}
	case service.StateLoaded, service.StateSleeping:
		unload := button{Label: "Unload", Action: act(ActUnload)}
		switch {
		case m.Draining:
			unload = button{Label: fmt.Sprintf("Draining, %d active", m.Active), Disabled: true}
		case m.Active > 0:
			unload.Label = fmt.Sprintf("Unload (busy, %d active)", m.Active)
		}
		r.Buttons = []button{unload, pin, logs}
	case service.StateFailed:
		r.Failed = true
		r.Error = failedText(m, at)
		r.Buttons = append(fixButtons(m.Fix), button{Label: "Retry", Action: act(ActLoad)}, pin, logs)
	default:
		load := button{Label: "Load", Action: act(ActLoad)}
		if !m.Fits(b) {
			load.Disabled = true
			r.Error = tooBig(m.EstimateBytes, b)
		}
		r.Buttons = []button{load, pin, logs}
	}
	r.More = []button{{Label: "Settings…", Action: rowAction{File: fileSettings}}, force, copyID, reveal, del}
	return r
}

// failedText says why a model's last load failed, and when it is tried again.
func failedText(m Model, at time.Time) string {
	text := cmp.Or(m.Error, "the last load failed; see its logs")
	if m.Cause != "" {
		text = "llama-server said “" + m.Cause + "”. " + m.CauseDo
	}
	if !m.NextRetry.IsZero() && m.NextRetry.After(at) {
		text += fmt.Sprintf(" (automatic retry in %s)", m.NextRetry.Sub(at).Round(time.Second))
	}
	return text
}

// fixButtons are the button that fixes a failed load first, before Retry; none when no fix is known.
func fixButtons(fix loadFix) []button {
	switch fix {
	case fixServer:
		return []button{{Label: "Settings…", Action: rowAction{Action: Action{Kind: ActOpenSettings}}}}
	case fixSettings:
		return []button{{Label: "Its settings…", Action: rowAction{File: fileSettings}}}
	case fixFile:
		return []button{{Label: "Delete…", Action: rowAction{File: fileDelete}}}
	}
	return nil
}

func stateText(m Model) string {
	var s string
	switch m.State {
	case service.StateLoading:
		s = view.LoadingText(m.Progress)
	case service.StateLoaded:
		s = "loaded"
		if m.Draining {
			s = "unloading when idle"
		}
	case service.StateUnloaded:
		s = "not loaded"
		if m.Wait != nil {
			s = "waiting"
		}
	default:
		s = string(m.State)
	}
	if m.Pinned {
		s += " · pinned"
	}
	return s
}

func detailParts(m Model, at time.Time) []string {
	e := m.Entry()
	var p []string
	if m.Running() {
		if m.Active > 0 {
			p = append(p, fmt.Sprintf("%d active", m.Active))
		}
		if m.Queued > 0 {
			p = append(p, fmt.Sprintf("%d queued", m.Queued))
		}
		if m.MemoryBytes > 0 {
			p = append(p, humanBytes(m.MemoryBytes)+" measured")
		} else if m.EstimateBytes > 0 && e.EstimateError == "" {
			p = append(p, "~"+humanBytes(m.EstimateBytes)+" estimated")
		}
	} else {
		if m.Queued > 0 {
			p = append(p, fmt.Sprintf("%d queued", m.Queued))
		}
		if m.EstimateBytes > 0 && e.EstimateError == "" { // else Unsized says so
			p = append(p, "needs ~"+humanBytes(m.EstimateBytes))
		}
		if e.SizeBytes > 0 {
			p = append(p, humanBytes(e.SizeBytes)+" file")
		}
	}
	switch {
	case m.CtxSize > 0:
		p = append(p, fmt.Sprintf("ctx %d", m.CtxSize))
	case e.ContextLength > 0:
		p = append(p, fmt.Sprintf("ctx %d", e.ContextLength))
	}
	if e.Quantization != "" {
		p = append(p, e.Quantization)
	}
	if kind := strings.TrimSpace(catalog.ParamsLabel(e.Parameters) + " " + e.Architecture); kind != "" {
		p = append(p, kind)
	}
	if !m.LastUsed.IsZero() {
		p = append(p, "used "+ago(m.LastUsed, at))
	}
	return p
}

// tooBig explains why a model cannot load, naming what bounds the budget: the configured limit, or
// the memory available on the system minus the reserve.
func tooBig(need int64, b service.Budget) string {
	if b.ConfiguredLimit > 0 && b.Limit >= b.ConfiguredLimit {
		return fmt.Sprintf("Needs ~%s but the memory budget is %s: raise memory_limit in Settings or use a smaller quantization.",
			humanBytes(need), humanBytes(b.Limit))
	}
	return fmt.Sprintf("Needs ~%s but only %s is available for models (system memory available minus the %s reserve): close other programs, lower memory_reserve in Settings, or use a smaller quantization.",
		humanBytes(need), humanBytes(b.Limit), humanBytes(b.Reserve))
}
