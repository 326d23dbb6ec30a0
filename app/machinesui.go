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

// machinesSection is the models window's "Other machines" part: the peers ([peers.NAME], other
// servers whose models are served here too) with their state and models, with Add and Remove; the
// workers a model is spread over, and this machine lent to others (workersui.go). Each kind of
// machine is built by a part function (peersPart, workersPart, lendPart).
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
	peers, found := s.Peers, m.u.b.Discovered() // found: other Llamatrays on the network (discoverui.go)
	key := peersKey(peers) + workersKey(s.Workers, s.Lending) + discoveredKey(found)
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
		objs = append(objs, m.workersPart(s.Workers)...) // workersui.go
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

// peersKey is what the section shows of peers (not the times of their reads).
func peersKey(peers []wire.Peer) string {
	var b strings.Builder
	for _, p := range peers {
		fmt.Fprintf(&b, "%s|%s|%s|%s|", p.Name, p.URL, p.State, p.Error)
		for _, m := range p.Models {
			fmt.Fprintf(&b, "%s=%s,", m.ID, m.Status)
		}
		b.WriteString(";")
	}
	return b.String()
}

// peersPart is one row per peer: name, address, state (and why it is down), its models, Remove.
func (m *machinesSection) peersPart(peers []wire.Peer) []fyne.CanvasObject {
	if len(peers) == 0 {
		l := wrapLabel("None. Add another Llamatray, llama-swap, llama.cpp's router, Ollama or any OpenAI-compatible server; its models are served here too.")
		return []fyne.CanvasObject{l}
	}
	var out []fyne.CanvasObject
	for _, p := range peers {
		name := p.Name
		title := widget.NewLabelWithStyle(fmt.Sprintf("%s — %s", p.Name, p.URL), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
		line := wrapLabel(peerLine(p))
		rm := widget.NewButtonWithIcon("Remove", theme.DeleteIcon(), nil)
		rm.OnTapped = func() {
			rm.Disable()
			m.u.background("Remove "+name, func() error { return m.u.b.RemovePeer(name) })
		}
		// The button keeps its own height beside the two lines (a Border would stretch it over both).
		out = append(out, container.NewBorder(nil, nil, nil, container.NewVBox(rm), container.NewVBox(title, line)))
	}
	return out
}

// peerLine is a peer's state and models in words.
func peerLine(p wire.Peer) string {
	state := peerState(p.State)
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

// peerState is a peer's state in words.
func peerState(state string) string {
	if w, ok := map[string]string{"up": "Answering", "down": "Not answering", "checking": "Checking…"}[state]; ok {
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
	d := dialog.NewForm("Add machine", "Add", "Cancel", []*widget.FormItem{
		widget.NewFormItem("Address", addr), widget.NewFormItem("Name", name), widget.NewFormItem("API key", key),
	}, func(ok bool) {
		if !ok {
			return
		}
		p := wire.PeerAdd{Name: strings.TrimSpace(name.Text), URL: strings.TrimSpace(addr.Text), APIKey: strings.TrimSpace(key.Text)}
		m.u.background("Add machine "+p.URL, func() error { return m.u.b.AddPeer(p) })
	}, m.win)
	d.Resize(fyne.NewSize(480, 240))
	d.Show()
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
		sub := MenuItem{Key: "peer " + p.Name, Label: p.Name + " — " + strings.ToLower(peerState(p.State))}
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
