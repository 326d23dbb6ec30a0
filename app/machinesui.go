package app

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/wire"
)

// machinesSection is the models window's "Other machines" part: the peers ([peers.NAME], other
// servers whose models are served here too) with their state and models, with Add and Remove; the
// workers a model is spread over, and this machine lent to others.
//
// The section folds (fold, titled Other machines): open by itself while it has a machine to show,
// folded while it has none, and hidden without the feature.
type machinesSection struct {
	u    *ui
	win  fyne.Window
	box  *fyne.Container
	fold *widget.Accordion // box under the title "Other machines"
	key  string            // what is shown, to leave an unchanged section alone
}

func newMachinesSection(u *ui, win fyne.Window) *machinesSection {
	m := &machinesSection{u: u, win: win, box: container.NewVBox()}
	m.fold = widget.NewAccordion(widget.NewAccordionItem("Other machines", m.box))
	m.fold.Hide()
	return m
}

// update shows s's machines; it takes no room without the feature.
func (m *machinesSection) update(s Snapshot) {
	offers := m.u.b.Offers()
	if !offers.Peers && !offers.Workers {
		if m.key != "" || len(m.box.Objects) > 0 {
			m.key, m.box.Objects = "", nil
			m.box.Refresh()
		}
		m.fold.Hide()
		return
	}
	peers, found := s.Peers, m.u.b.Discovered() // found: other Llamatrays on the network
	// What is shown, not the times of the reads: the key leaves an unchanged section alone.
	ps, fs := slices.Clone(peers), slices.Clone(found)
	for i := range ps {
		ps[i].LastSeen, ps[i].NextTry = nil, nil
	}
	for i := range fs {
		fs[i].LastSeen = time.Time{}
	}
	key := fmt.Sprint(ps, s.Workers, s.Lending, fs)
	if key == m.key && len(m.box.Objects) > 0 {
		return
	}
	m.key = key
	var objs []fyne.CanvasObject
	if offers.Peers {
		add := widget.NewButtonWithIcon("Add machine…", theme.ContentAddIcon(), m.askPeer)
		objs = append(objs, container.NewBorder(nil, nil, nil, add))
		objs = append(append(objs, m.peersPart(peers)...), m.discoveredPart(found)...)
	}
	if offers.Workers {
		objs = append(objs, m.workersPart(s.Workers)...)
		objs = append(objs, m.lendPart(s.Lending)...)
	}
	m.box.Objects = objs
	m.box.Refresh()
	m.fold.Show()
	if len(peers) > 0 || len(found) > 0 || len(s.Workers) > 0 || s.Lending.On {
		m.fold.Open(0)
	} else {
		m.fold.Close(0)
	}
}

// peersPart is one row per peer: name, address, state (and why it is down), its models, Remove.
func (m *machinesSection) peersPart(peers []wire.Peer) []fyne.CanvasObject {
	if len(peers) == 0 {
		l := wrapLabel("None. Add another Llamatray, llama-swap, llama.cpp's router, Ollama or any OpenAI-compatible server; its models are served here too.")
		return []fyne.CanvasObject{l}
	}
	var out []fyne.CanvasObject
	for _, p := range peers {
		rm := widget.NewButtonWithIcon("Remove", theme.DeleteIcon(), nil)
		rm.OnTapped = func() {
			rm.Disable()
			m.u.background("Remove "+p.Name, func() error { return m.u.b.RemovePeer(p.Name) })
		}
		// The button keeps its own height beside the two lines (a Border would stretch it over both).
		out = append(out, container.NewBorder(nil, nil, nil, container.NewVBox(rm), machineRow(p.Name, p.URL, peerLine(p))))
	}
	return out
}

// peerLine is a peer's state and models in words.
func peerLine(p wire.Peer) string {
	state := machineState(p.State)
	if p.Error != "" {
		state += ": " + p.Error
	}
	if len(p.Models) == 0 {
		return state + " — no models"
	}
	ids := make([]string, 0, len(p.Models))
	for _, md := range p.Models {
		id := md.ID
		if md.Local {
			id = md.Ref + " (a model here has its ID)"
		}
		ids = append(ids, id)
	}
	if p.State != "up" {
		return fmt.Sprintf("%s — models unavailable: %s", state, strings.Join(ids, ", "))
	}
	return fmt.Sprintf("%s — %s", state, strings.Join(ids, ", "))
}

// machineState is a peer's or a worker's state in words.
func machineState(state string) string {
	if w, ok := map[string]string{"up": "Answering", "down": "Not answering", "checking": "Checking…",
		wire.WorkerRefused: "Refuses this machine", wire.WorkerBusy: "Busy with another machine"}[state]; ok {
		return w
	}
	return state
}

// askPeer asks for a peer's address, name and key, and adds it.
func (m *machinesSection) askPeer() {
	addr := widget.NewEntry()
	addr.SetPlaceHolder("http://192.168.1.20:8080")
	name := widget.NewEntry()
	name.SetPlaceHolder("optional: from the address")
	key := widget.NewPasswordEntry()
	key.SetPlaceHolder("optional: sent to this machine only")
	m.askAdd("Add machine", addr, name, key, func() wire.PeerAdd {
		return wire.PeerAdd{Name: strings.TrimSpace(name.Text), URL: strings.TrimSpace(addr.Text), APIKey: strings.TrimSpace(key.Text)}
	})
}

// askAdd is the form that adds a machine: its address (an entry or a label), name and key; Add adds
// the peer that peer makes of them.
func (m *machinesSection) askAdd(title string, addr, name, key fyne.CanvasObject, peer func() wire.PeerAdd) {
	d := dialog.NewForm(title, "Add", "Cancel", []*widget.FormItem{
		widget.NewFormItem("Address", addr), widget.NewFormItem("Name", name), widget.NewFormItem("API key", key),
	}, func(ok bool) {
		if !ok {
			return
		}
		p := peer()
		m.u.background("Add machine "+p.URL, func() error { return m.u.b.AddPeer(p) })
	}, m.win)
	d.Resize(fyne.NewSize(480, 240))
	d.Show()
}

// partTitle is the title of a part of the section: the machines found, the workers.
func partTitle(text string) *widget.Label {
	return widget.NewLabelWithStyle(text, fyne.TextAlignLeading, fyne.TextStyle{Italic: true})
}

// machineRow is a machine's name and address in bold over a line of its state in words.
func machineRow(name, addr, line string) *fyne.Container {
	title := boldLabel(fmt.Sprintf("%s — %s", name, addr))
	return container.NewVBox(title, wrapLabel(line))
}

// "Found on this network": other Llamatrays mDNS found on the local network (router/discover),
// under the peers. One is only offered: Add asks for its key (a Llamatray that listens beyond
// loopback requires one) and adds it as a peer, the user's choice.

// discoveredPart is a title and one row per instance found, with Add; nothing when none is found.
func (m *machinesSection) discoveredPart(found []wire.Discovered) []fyne.CanvasObject {
	if len(found) == 0 {
		return nil
	}
	out := []fyne.CanvasObject{partTitle("Found on this network")}
	for _, d := range found {
		line := fmt.Sprintf("%s — %s", d.Instance, d.URL)
		if d.Version != "" {
			line += " (Llamatray " + d.Version + ")"
		}
		add := widget.NewButtonWithIcon("Add", theme.ContentAddIcon(), func() { m.askDiscovered(d) })
		out = append(out, container.NewBorder(nil, nil, nil, add, widget.NewLabel(line)))
	}
	return out
}

// discoveredAdd is the peer Add makes of d, with the name and key given (a blank name: d's).
func discoveredAdd(d wire.Discovered, name, key string) wire.PeerAdd {
	return wire.PeerAdd{Name: cmp.Or(strings.TrimSpace(name), d.Name), URL: d.URL, APIKey: strings.TrimSpace(key)}
}

// askDiscovered asks for d's name and key, and adds it as a peer.
func (m *machinesSection) askDiscovered(d wire.Discovered) {
	name := widget.NewEntry()
	name.SetText(d.Name)
	key := widget.NewPasswordEntry()
	key.SetPlaceHolder("the key its owner gave you (its api_keys)")
	m.askAdd("Add "+d.Instance, widget.NewLabel(d.URL), name, key, func() wire.PeerAdd { return discoveredAdd(d, name.Text, key.Text) })
}

// The workers' part: the [workers.NAME] machines a model is spread over, with their memory and the
// model using them, and this machine lent to others ("Lend this machine", as the tray's toggle).

// workersPart is one row per worker: name, address, state (and why it is not up), its devices with
// their memory, the model using it.
func (m *machinesSection) workersPart(ws []wire.WorkerStatus) []fyne.CanvasObject {
	if len(ws) == 0 {
		return nil
	}
	out := []fyne.CanvasObject{partTitle("Workers (one model spread over several machines)")}
	for _, w := range ws {
		out = append(out, machineRow(w.Name, w.Address, workerLine(w)))
	}
	return out
}

// workerLine is a worker's state, memory and user in words.
func workerLine(w wire.WorkerStatus) string {
	state := machineState(w.State)
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
