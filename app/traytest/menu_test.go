//go:build linux

package traytest

import (
	"fmt"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"
)

const menuIface = "com.canonical.dbusmenu"

// menuNode is one entry of a com.canonical.dbusmenu layout, as a tray host shows it.
type menuNode struct {
	ID       int32
	Label    string // as displayed: mnemonic underscores decoded
	Type     string // "separator" or "" for a normal item
	Enabled  bool
	Children []menuNode
}

// rawLayout is the (ia{sv}av) structure of GetLayout.
type rawLayout struct {
	ID       int32
	Props    map[string]dbus.Variant
	Children []dbus.Variant
}

// menuPathOf reads the item's Menu property: the object path of its dbusmenu.
func menuPathOf(conn *dbus.Conn, it trayItem) (dbus.ObjectPath, error) {
	v, err := conn.Object(it.Bus, it.Path).GetProperty(itemIface + ".Menu")
	if err != nil {
		return "", fmt.Errorf("read %s Menu property: %w", it, err)
	}
	p, ok := v.Value().(dbus.ObjectPath)
	if !ok {
		return "", fmt.Errorf("%s Menu property is %s, want an object path", it, v.Signature())
	}
	return p, nil
}

// getLayout calls GetLayout(0, -1, []) on the item's menu: the whole tree.
func getLayout(conn *dbus.Conn, bus string, menu dbus.ObjectPath) (menuNode, error) {
	var rev uint32
	var raw rawLayout
	err := conn.Object(bus, menu).Call(menuIface+".GetLayout", 0, int32(0), int32(-1), []string{}).Store(&rev, &raw)
	if err != nil {
		return menuNode{}, fmt.Errorf("GetLayout on %s%s: %w", bus, menu, err)
	}
	return decodeLayout(raw)
}

func decodeLayout(raw rawLayout) (menuNode, error) {
	n := menuNode{ID: raw.ID, Enabled: true}
	if v, ok := raw.Props["label"]; ok {
		s, _ := v.Value().(string)
		n.Label = displayLabel(s)
	}
	if v, ok := raw.Props["type"]; ok {
		n.Type, _ = v.Value().(string)
	}
	if v, ok := raw.Props["enabled"]; ok {
		n.Enabled, _ = v.Value().(bool)
	}
	for _, c := range raw.Children {
		var sub rawLayout
		if err := dbus.Store([]interface{}{c.Value()}, &sub); err != nil {
			return menuNode{}, fmt.Errorf("menu item %d: child %s: %w", raw.ID, c.Signature(), err)
		}
		child, err := decodeLayout(sub)
		if err != nil {
			return menuNode{}, err
		}
		n.Children = append(n.Children, child)
	}
	return n, nil
}

// displayLabel is how the dbusmenu spec says a label is shown: "__" is one underscore, and any
// other underscore is a mnemonic marker, not displayed.
func displayLabel(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '_' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '_' {
			b.WriteByte('_')
			i++
		}
	}
	return b.String()
}

// find returns the first node, depth first, for which ok is true.
func (n menuNode) find(ok func(menuNode) bool) (menuNode, bool) {
	if ok(n) {
		return n, true
	}
	for _, c := range n.Children {
		if f, found := c.find(ok); found {
			return f, true
		}
	}
	return menuNode{}, false
}

// child returns the first direct child for which ok is true.
func (n menuNode) child(ok func(menuNode) bool) (menuNode, bool) {
	for _, c := range n.Children {
		if ok(c) {
			return c, true
		}
	}
	return menuNode{}, false
}

// String renders the tree, one item a line, for failure messages.
func (n menuNode) String() string {
	var b strings.Builder
	var walk func(m menuNode, depth int)
	walk = func(m menuNode, depth int) {
		label := m.Label
		if m.Type == "separator" {
			label = "────"
		}
		if !m.Enabled {
			label += "  [disabled]"
		}
		fmt.Fprintf(&b, "%s%d %s\n", strings.Repeat("  ", depth), m.ID, label)
		for _, c := range m.Children {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}

// hasPrefix matches items whose label starts with p.
func hasPrefix(p string) func(menuNode) bool {
	return func(m menuNode) bool { return strings.HasPrefix(m.Label, p) }
}

// modelItem matches the Available entry of model id: "id" or "id — details".
func modelItem(id string) func(menuNode) bool {
	return func(m menuNode) bool { return m.Label == id || strings.HasPrefix(m.Label, id+" — ") }
}

// click sends the "clicked" event a tray host sends when the user picks item id.
func click(conn *dbus.Conn, bus string, menu dbus.ObjectPath, id int32) error {
	ts := uint32(time.Now().Unix())
	call := conn.Object(bus, menu).Call(menuIface+".Event", 0, id, "clicked", dbus.MakeVariant(""), ts)
	if call.Err != nil {
		return fmt.Errorf("Event(%d, clicked): %w", id, call.Err)
	}
	return nil
}

// activate calls Activate(0, 0) on the tray item: what a tray host does on a click on the icon.
func activate(conn *dbus.Conn, it trayItem) error {
	if call := conn.Object(it.Bus, it.Path).Call(itemIface+".Activate", 0, int32(0), int32(0)); call.Err != nil {
		return fmt.Errorf("Activate on %s: %w", it, call.Err)
	}
	return nil
}
