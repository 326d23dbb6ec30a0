package sni

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/godbus/dbus/v5"
)

// The menu's object path and interface (com.canonical.dbusmenu, version 3 of the protocol).
const (
	menuPath    = dbus.ObjectPath("/MenuBar")
	menuIface   = "com.canonical.dbusmenu"
	menuVersion = uint32(3)
)

// layout is one item as GetLayout sends it: (ia{sv}av), the children being layouts in variants.
type layout struct {
	ID       int32
	Props    map[string]dbus.Variant
	Children []dbus.Variant
}

// itemProps is one item's properties as GetGroupProperties and ItemsPropertiesUpdated send them.
type itemProps struct {
	ID    int32
	Props map[string]dbus.Variant
}

// removedProps names the properties of one item that went back to their defaults.
type removedProps struct {
	ID    int32
	Names []string
}

// event is one entry of EventGroup.
type event struct {
	ID        int32
	EventID   string
	Data      dbus.Variant
	Timestamp uint32
}

// menu serves com.canonical.dbusmenu for the menu set last.
//
// A change reaches the host in one step: the new tree is swapped in whole, then its property
// changes are signalled (ItemsPropertiesUpdated), then, only when items came or went, one
// LayoutUpdated with a new revision. A host never sees a half-built menu, and an item keeps its
// ID while its key stays, so a label that changes many times a second is a property update.
type menu struct {
	conn *dbus.Conn
	log  *slog.Logger

	mu       sync.Mutex // guards tree and revision
	tree     *tree
	revision uint32
}

func newMenu(conn *dbus.Conn, log *slog.Logger) *menu {
	return &menu{conn: conn, log: log, tree: newTree(), revision: 1}
}

// set replaces the menu and tells the host what changed. Calls must not overlap: their signals
// would interleave.
func (m *menu) set(items []Item) {
	m.mu.Lock()
	next := m.tree.lay(items)
	changed, changes := next.diff(m.tree)
	m.tree = next
	if changed {
		m.revision++
	}
	rev := m.revision
	m.mu.Unlock()
	m.log.Debug("tray menu changed", "revision", rev, "layout", changed, "items_changed", len(changes))

	if len(changes) > 0 {
		set, removed := []itemProps{}, []removedProps{}
		for _, c := range changes {
			if len(c.set) > 0 {
				set = append(set, itemProps{ID: c.id, Props: variants(c.set, nil)})
			}
			if len(c.removed) > 0 {
				removed = append(removed, removedProps{ID: c.id, Names: c.removed})
			}
		}
		if err := m.conn.Emit(menuPath, menuIface+".ItemsPropertiesUpdated", set, removed); err != nil {
			m.log.Debug("tray menu: ItemsPropertiesUpdated not sent", "err", err)
		}
	}
	if changed {
		if err := m.conn.Emit(menuPath, menuIface+".LayoutUpdated", rev, int32(0)); err != nil {
			m.log.Debug("tray menu: LayoutUpdated not sent", "err", err)
		}
	}
}

// variants converts properties for the bus, keeping only names when names is not empty.
func variants(p props, names []string) map[string]dbus.Variant {
	out := make(map[string]dbus.Variant, len(p))
	for k, v := range p {
		if len(names) == 0 || slices.Contains(names, k) {
			out[k] = dbus.MakeVariant(v)
		}
	}
	return out
}

func layoutOf(n *node, depth int32, names []string) layout {
	l := layout{ID: n.id, Props: variants(n.props, names), Children: []dbus.Variant{}}
	if depth == 0 {
		return l
	}
	for _, c := range n.children {
		l.Children = append(l.Children, dbus.MakeVariant(layoutOf(c, depth-1, names)))
	}
	return l
}

func unknownItem(id int32) *dbus.Error {
	return dbus.MakeFailedError(fmt.Errorf("no menu item with id %d", id))
}

// getLayout is com.canonical.dbusmenu.GetLayout: the subtree under parentID, recursionDepth
// levels deep (-1: all of it).
func (m *menu) getLayout(parentID, recursionDepth int32, propertyNames []string) (uint32, layout, *dbus.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.tree.byID[parentID]
	if !ok {
		return 0, layout{}, unknownItem(parentID)
	}
	return m.revision, layoutOf(n, recursionDepth, propertyNames), nil
}

// getGroupProperties is com.canonical.dbusmenu.GetGroupProperties; no ids means every item.
func (m *menu) getGroupProperties(ids []int32, propertyNames []string) ([]itemProps, *dbus.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(ids) == 0 {
		ids = slices.Sorted(maps.Keys(m.tree.byID))
	}
	out := []itemProps{}
	for _, id := range ids {
		if n, ok := m.tree.byID[id]; ok {
			out = append(out, itemProps{ID: id, Props: variants(n.props, propertyNames)})
		}
	}
	return out, nil
}

// getProperty is com.canonical.dbusmenu.GetProperty.
func (m *menu) getProperty(id int32, name string) (dbus.Variant, *dbus.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.tree.byID[id]
	if !ok {
		return dbus.Variant{}, unknownItem(id)
	}
	v, ok := n.props[name]
	if !ok {
		return dbus.Variant{}, dbus.MakeFailedError(fmt.Errorf("menu item %d has no property %q", id, name))
	}
	return dbus.MakeVariant(v), nil
}

// eventGroup is com.canonical.dbusmenu.EventGroup; it returns the ids it does not know.
func (m *menu) eventGroup(events []event) ([]int32, *dbus.Error) {
	bad := []int32{}
	for _, e := range events {
		if !m.handle(e.ID, e.EventID) {
			bad = append(bad, e.ID)
		}
	}
	return bad, nil
}

func (m *menu) handle(id int32, eventID string) bool {
	m.mu.Lock()
	n, ok := m.tree.byID[id]
	var click func()
	if ok {
		click = n.click
	}
	m.mu.Unlock()
	if ok && eventID == "clicked" && click != nil {
		go click()
	}
	return ok
}
