package app

import (
	"fmt"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/wire"
)

// The workers' part of "Other machines": the [workers.NAME] machines a model is spread over, with
// their memory and the model using them, and this machine lent to others ("Lend this machine", as
// the tray's toggle).

// workersKey is what the workers' part shows.
func workersKey(ws []wire.WorkerStatus, l wire.Lending) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "%s|%s|%s|%s|%s|", w.Name, w.Address, w.State, w.LastError, w.Model)
		for _, d := range w.Devices {
			fmt.Fprintf(&b, "%s=%d/%d,", d.Name, d.Free, d.Total)
		}
		b.WriteString(";")
	}
	fmt.Fprintf(&b, "lend %v %s %s %s %s", l.On, l.State, l.Listen, l.Addr, l.Error)
	return b.String()
}

// workersPart is one row per worker: name, address, state (and why it is not up), its devices with
// their memory, the model using it.
func (m *machinesSection) workersPart(ws []wire.WorkerStatus) []fyne.CanvasObject {
	if len(ws) == 0 {
		return nil
	}
	out := []fyne.CanvasObject{widget.NewLabelWithStyle("Workers (one model spread over several machines)", fyne.TextAlignLeading, fyne.TextStyle{Italic: true})}
	for _, w := range ws {
		title := widget.NewLabelWithStyle(fmt.Sprintf("%s — %s", w.Name, w.Address), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		line := wrapLabel(workerLine(w))
		out = append(out, container.NewVBox(title, line))
	}
	return out
}

// workerLine is a worker's state, memory and user in words.
func workerLine(w wire.WorkerStatus) string {
	state := map[string]string{wire.WorkerUp: "Answering", wire.WorkerDown: "Not answering",
		wire.WorkerRefused: "Refuses this machine", wire.WorkerBusy: "Busy with another machine"}[w.State]
	if state == "" {
		state = w.State
	}
	if w.LastError != "" && w.State != wire.WorkerUp {
		// The heading already names the worker and its address.
		state += ": " + strings.TrimPrefix(w.LastError, fmt.Sprintf("worker %s (%s): ", w.Name, w.Address))
	}
	parts := []string{state}
	for _, d := range w.Devices {
		if d.Free > 0 {
			parts = append(parts, fmt.Sprintf("%s %s (%s free)", d.Name, humanBytes(d.Total), humanBytes(d.Free)))
		} else {
			parts = append(parts, fmt.Sprintf("%s %s", d.Name, humanBytes(d.Total)))
		}
	}
	if w.Model != "" {
		parts = append(parts, "used by "+w.Model)
	} else if w.State == wire.WorkerUp {
		parts = append(parts, "no model on it")
	}
	return strings.Join(parts, " · ")
}

// lendPart is this machine lent to others: the toggle, where it listens, the lines a head needs.
func (m *machinesSection) lendPart(l wire.Lending) []fyne.CanvasObject {
	if l.State == "" {
		return nil
	}
	check := widget.NewCheck("Lend this machine to other Llamatrays", nil)
	check.SetChecked(l.On)
	check.OnChanged = func(on bool) {
		check.Disable()
		m.u.background("Lend this machine", func() error { return m.u.b.SetLending(on) })
	}
	line := wrapLabel(lendLine(l))
	show := widget.NewButtonWithIcon("Lines for the other machine…", theme.ContentCopyIcon(), m.showLendLines)
	if !l.On {
		show.Disable()
	}
	return []fyne.CanvasObject{container.NewBorder(nil, nil, nil, show, check), line}
}

// lendLine says what lending does now.
func lendLine(l wire.Lending) string {
	switch l.State {
	case wire.LendOn:
		return fmt.Sprintf("Lent as worker %q on %s: llama.cpp's RPC server, reachable only through Llamatray's link (TLS and the pairing token).", l.Name, l.Addr)
	case wire.LendStarting:
		return "Starting llama.cpp's RPC server and the link on " + l.Listen + "…"
	case wire.LendFailed:
		return "Not lent: " + l.Error
	}
	return "Off. When on, another Llamatray can spread a model over this machine's memory (llama.cpp's RPC server behind an authenticated link on " + l.Listen + ")."
}

// showLendLines shows the head's [workers.NAME] lines with Copy and New token.
func (m *machinesSection) showLendLines() {
	lines, err := m.u.b.LendConfigLines()
	if err != nil {
		dialog.ShowError(err, m.win)
		return
	}
	text := widget.NewLabel(lines)
	text.TextStyle = fyne.TextStyle{Monospace: true}
	text.Wrapping = fyne.TextWrapBreak
	intro := wrapLabel("On the other machine, add these lines to Llamatray's configuration, then name the worker in a model's settings (workers = [\"…\"]). Keep the token secret: it is what lets a machine use this one.")
	var d dialog.Dialog
	copyBtn := widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() { m.u.app.Clipboard().SetContent(lines) })
	fresh := widget.NewButton("New token", func() {
		dialog.ShowConfirm("New token", "Machines given the current token are refused from now on. Make a new one?", func(ok bool) {
			if !ok {
				return
			}
			d.Hide()
			m.u.background("New token", func() error { return m.u.b.NewLendToken() })
		}, m.win)
	})
	body := container.NewBorder(intro, container.NewHBox(copyBtn, fresh), nil, nil, text)
	d = dialog.NewCustom("Lend this machine", "Close", body, m.win)
	d.Resize(fyne.NewSize(560, 300))
	d.Show()
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
