package app

// "Found on this network": other Llamatrays mDNS found on the local network (router/discover),
// under the peers of the Other machines section. One is only offered: Add asks for its key (a
// Llamatray that listens beyond loopback requires one) and adds it as a peer, the user's choice.

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

// discoveredKey is what the part shows of found, for the section's key.
func discoveredKey(found []wire.Discovered) string {
	var b strings.Builder
	for _, d := range found {
		fmt.Fprintf(&b, "found %s|%s|%s|%s;", d.Name, d.Instance, d.URL, d.Version)
	}
	return b.String()
}

// discoveredPart is a title and one row per instance found, with Add; nothing when none is found.
func (m *machinesSection) discoveredPart(found []wire.Discovered) []fyne.CanvasObject {
	if len(found) == 0 {
		return nil
	}
	out := []fyne.CanvasObject{widget.NewLabelWithStyle("Found on this network", fyne.TextAlignLeading, fyne.TextStyle{Italic: true})}
	for _, d := range found {
		d := d
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
	name = strings.TrimSpace(name)
	if name == "" {
		name = d.Name
	}
	return wire.PeerAdd{Name: name, URL: d.URL, APIKey: strings.TrimSpace(key)}
}

// askDiscovered asks for d's name and key, and adds it as a peer.
func (m *machinesSection) askDiscovered(d wire.Discovered) {
	name := widget.NewEntry()
	name.SetText(d.Name)
	key := widget.NewPasswordEntry()
	key.SetPlaceHolder("the key its owner gave you (its api_keys)")
	dlg := dialog.NewForm("Add "+d.Instance, "Add", "Cancel", []*widget.FormItem{
		widget.NewFormItem("Address", widget.NewLabel(d.URL)), widget.NewFormItem("Name", name), widget.NewFormItem("API key", key),
	}, func(ok bool) {
		if !ok {
			return
		}
		p := discoveredAdd(d, name.Text, key.Text)
		m.u.background("Add machine "+p.URL, func() error { return m.u.b.AddPeer(p) })
	}, m.win)
	dlg.Resize(fyne.NewSize(480, 240))
	dlg.Show()
}
