package app

import (
	"fmt"
	"strings"

	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/view"
	"github.com/llamatray/llamatray/router/wire"
)

// ActionKind says what a menu item does when clicked.
type ActionKind int

// The tray menu actions.
const (
	ActNone            ActionKind = iota
	ActCopy                       // copy Action.Text to the clipboard
	ActLoad                       // start loading Action.Model
	ActUnload                     // unload Action.Model, draining in-flight requests
	ActForceUnload                // unload Action.Model now, cutting in-flight requests
	ActPin                        // pin Action.Model
	ActUnpin                      // unpin Action.Model
	ActShowLogs                   // open the log view of Action.Model
	ActOpenWindow                 // show the models window
	ActOpenSettings               // show the settings window
	ActOpenLogsFolder             // open the logs folder in the file manager
	ActToggleAutostart            // turn start at login on or off
	ActQuit                       // stop every child and exit
	ActOpenURL                    // open Action.Text in the browser
	ActToggleLend                 // turn "Lend this machine" on or off
	ActTryIt                      // open the Try-it window
)

// Action is what a click does, as data, so menus can be compared in tests.
type Action struct {
	Kind  ActionKind
	Model string // model ID for model actions
	Text  string // text to copy for ActCopy
}

// MenuItem is one tray menu entry, independent of any UI toolkit.
type MenuItem struct {
	Key       string // identity among its siblings where the label changes (a model's entry); "" when the action or label is the identity
	Label     string
	Action    Action
	Disabled  bool
	Checked   bool
	Separator bool
	Children  []MenuItem // a submenu when not empty
}

func sep() MenuItem { return MenuItem{Separator: true} }

func item(label string, kind ActionKind, model string) MenuItem {
	return MenuItem{Label: label, Action: Action{Kind: kind, Model: model}}
}

// BuildMenu lays out the tray menu for a snapshot: the listener header, running models (each with
// a submenu), the Available submenu, then the app entries. It is pure: same snapshot, same menu.
func BuildMenu(s Snapshot) []MenuItem {
	out := append(header(s), sep())

	var running, available []Model
	for _, m := range s.Models {
		if GroupOf(m) == GroupAvailable {
			available = append(available, m)
		} else {
			running = append(running, m)
		}
	}
	if len(running) == 0 {
		out = append(out, MenuItem{Label: "No models loaded", Disabled: true})
	}
	for _, m := range running {
		out = append(out, MenuItem{Key: "model " + m.ID, Label: runningLabel(m), Children: modelSubmenu(m)})
	}
	out = append(out, availableMenu(s, available))
	out = append(out, peersMenu(s)...)

	out = append(out, sep(), item("Open Llamatray…", ActOpenWindow, ""))
	if s.ListenErr == "" && s.ListenAddr != "" && len(s.Models) > 0 {
		out = append(out, item("Try it…", ActTryIt, "")) // a conversation with a model, straight from the tray
	}
	out = append(out,
		item("Settings…", ActOpenSettings, ""),
		item("Open logs folder", ActOpenLogsFolder, ""),
		MenuItem{Label: "Start at login", Action: Action{Kind: ActToggleAutostart}, Checked: s.Autostart},
	)
	out = append(out, lendMenu(s)...)
	out = append(out,
		sep(),
		item("Quit", ActQuit, ""),
	)
	return out
}

// header is the first line or two: where the router serves, or why it does not.
func header(s Snapshot) []MenuItem {
	var out []MenuItem
	if s.ListenErr != "" {
		out = append(out, MenuItem{Label: "Not serving: " + s.ListenErr, Action: Action{Kind: ActOpenSettings}})
	} else {
		out = append(out, MenuItem{
			Label:  "Serving on " + s.ListenAddr,
			Action: Action{Kind: ActCopy, Text: "http://" + s.ListenAddr},
		})
	}
	if s.Server.Path == "" {
		out = append(out, MenuItem{Label: "llama-server not found — Install llama-server…", Action: Action{Kind: ActOpenWindow}})
	}
	out = append(out, updateItems(s)...)
	stopped := 0
	for _, d := range s.Downloads {
		if d.State != "" && d.State != hub.StateDownloading {
			stopped++
			continue
		}
		out = append(out, MenuItem{Key: "download " + d.Model, Label: downloadLabel(d), Action: Action{Kind: ActOpenWindow}})
	}
	if stopped > 0 {
		out = append(out, MenuItem{Key: "downloads stopped", Label: fmt.Sprintf("⇣ %s paused or failed — resume in the window", plural(stopped, "download")), Action: Action{Kind: ActOpenWindow}})
	}
	return out
}

// downloadLabel is "⇣ org/repo:Q4_K_M — 42% of 4.1 GiB · 12 MiB/s".
func downloadLabel(d hub.PullStatus) string {
	p := d.Progress
	if p.Total <= 0 {
		return "⇣ " + d.Model + " — starting"
	}
	l := fmt.Sprintf("⇣ %s — %d%% of %s", d.Model, p.Done*100/p.Total, humanBytes(p.Total))
	if p.Rate > 0 {
		l += " · " + humanBytes(int64(p.Rate)) + "/s"
	}
	return l
}

// runningLabel is "● id — 2 active · 4.1 GiB", "◐ id" for a sleeping model, "◌ id — loading 40%".
func runningLabel(m Model) string {
	var parts []string
	mark := "●"
	switch m.State {
	case service.StateSleeping:
		mark = "◐"
	case service.StateLoading:
		mark = "◌"
		parts = append(parts, view.LoadingText(m.Progress))
	case service.StateStopping:
		mark = "○"
		if m.Wait == nil { // else the reason says it
			parts = append(parts, "stopping")
		}
	}
	if m.Active > 0 {
		parts = append(parts, fmt.Sprintf("%d active", m.Active))
	}
	if w := waitText(m); w != "" {
		parts = append(parts, w)
	} else if m.Queued > 0 {
		parts = append(parts, fmt.Sprintf("%d queued", m.Queued))
	}
	if m.Draining && m.State != service.StateStopping {
		parts = append(parts, "unloading")
	}
	if m.State != service.StateSleeping && m.State != service.StateLoading && m.Held() > 0 {
		parts = append(parts, humanBytes(m.Held()))
	}
	if m.Pinned {
		parts = append(parts, "pinned")
	}
	label := mark + " " + m.ID
	if len(parts) > 0 {
		label += " — " + strings.Join(parts, " · ")
	}
	return label
}

// modelSubmenu is Unload (or its drain state), Force unload, Pin/Unpin, Copy model ID, Show logs.
func modelSubmenu(m Model) []MenuItem {
	unload := item("Unload", ActUnload, m.ID)
	force := item("Force unload", ActForceUnload, m.ID)
	force.Disabled = m.Active == 0
	switch {
	case m.State == service.StateStopping:
		unload = MenuItem{Label: "Stopping…", Disabled: true}
		force.Disabled = true
	case m.Draining:
		unload = MenuItem{Label: fmt.Sprintf("Unloading — draining, %d active", m.Active), Disabled: true}
	case m.State == service.StateLoading:
		unload.Label = "Cancel load"
	case m.Active > 0:
		unload.Label = fmt.Sprintf("Unload — busy, %d active", m.Active)
	}
	pin := item("Pin", ActPin, m.ID)
	if m.Pinned {
		pin = item("Unpin", ActUnpin, m.ID)
	}
	unload.Key, force.Key, pin.Key = "unload", "force", "pin"
	return []MenuItem{
		unload,
		force,
		pin,
		sep(),
		{Label: "Copy model ID", Action: Action{Kind: ActCopy, Text: m.ID}},
		item("Logs", ActShowLogs, m.ID), // as the window's row says
	}
}

// availableMenu lists unloaded models; a click loads one. Models too large for the budget are marked
// and disabled; models that would push others out say so.
func availableMenu(s Snapshot, ms []Model) MenuItem {
	top := MenuItem{Key: "available", Label: fmt.Sprintf("Available (%d)", len(ms))}
	if len(ms) == 0 {
		top.Label = "Available"
		msg := "No other models"
		if len(s.Models) == 0 {
			msg = "No models found — Get models… in the window"
		}
		top.Children = []MenuItem{{Label: msg, Disabled: true}}
		return top
	}
	for _, m := range ms {
		top.Children = append(top.Children, availableItem(s.Budget, m))
	}
	return top
}

func availableItem(b service.Budget, m Model) MenuItem {
	var parts []string
	if m.EstimateBytes > 0 {
		parts = append(parts, "~"+humanBytes(m.EstimateBytes))
	}
	it := item(m.ID, ActLoad, m.ID)
	switch {
	case waitText(m) != "": // the label changes as it waits; the item, keyed by its action, stays
		it.Label = "◌ " + m.ID
		parts = []string{waitText(m)}
	case m.State == service.StateFailed:
		it.Label = "✕ " + m.ID
		parts = append(parts, "failed, click to retry")
	case !m.Fits(b):
		it.Label = "⚠ " + m.ID
		it.Disabled = true
		parts = append(parts, "won't fit in "+humanBytes(b.Limit))
	case m.NeedsEviction(b):
		parts = append(parts, "unloads others")
	}
	if len(parts) > 0 {
		it.Label += " — " + strings.Join(parts, " · ")
	}
	return it
}

// peersMenu is the tray's "Other machines" submenu: each peer with its state, and its models; a
// click on one copies the name that reaches it here (its ID, or peer:NAME/ID when a model here
// has the ID). Nothing without peers.
func peersMenu(s Snapshot) []MenuItem {
	if len(s.Peers) == 0 {
		return nil
	}
	up := 0
	top := MenuItem{Key: "peers"}
	for _, p := range s.Peers {
		if p.State == "up" {
			up++
		}
		sub := MenuItem{Key: "peer " + p.Name, Label: p.Name + " — " + strings.ToLower(machineState(p.State))}
		for _, m := range p.Models {
			name := m.ID
			if m.Local {
				name = m.Ref
			}
			it := MenuItem{Key: "peer model " + m.Ref, Label: name, Action: Action{Kind: ActCopy, Text: name}}
			if p.State != "up" {
				it.Label, it.Disabled = name+" — unavailable", true
			}
			sub.Children = append(sub.Children, it)
		}
		if len(sub.Children) == 0 {
			sub.Children = []MenuItem{{Label: "No models", Disabled: true}}
		}
		top.Children = append(top.Children, sub)
	}
	top.Label = fmt.Sprintf("Other machines (%d of %d answering)", up, len(s.Peers))
	return []MenuItem{top}
}

// lendMenu is the tray's "Lend this machine" toggle, with its state when it is not simply on or
// off. Nothing when the backend does not lend.
func lendMenu(s Snapshot) []MenuItem {
	l := s.Lending
	if l.State == "" {
		return nil
	}
	label := "Lend this machine"
	switch l.State {
	case wire.LendOn:
		label += " (on " + l.Addr + ")"
	case wire.LendStarting:
		label += " (starting…)"
	case wire.LendFailed:
		label += " (failed — see the window)"
	}
	return []MenuItem{{Key: "lend", Label: label, Action: Action{Kind: ActToggleLend}, Checked: l.On}}
}
