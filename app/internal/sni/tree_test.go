package sni

import (
	"reflect"
	"testing"
)

func menuWith(active string, avail ...string) []Item {
	model := Item{Key: "model alpha", Label: "● alpha" + active, Children: []Item{
		{Key: "unload", Label: "Unload" + active},
		{Separator: true},
		{Label: "Show logs"},
	}}
	var avails []Item
	for _, a := range avail {
		avails = append(avails, Item{Key: "load " + a, Label: a})
	}
	if len(avails) == 0 {
		avails = []Item{{Label: "No other models", Disabled: true}}
	}
	return []Item{
		{Label: "Serving"},
		{Separator: true},
		model,
		{Key: "available", Label: "Available", Children: avails},
		{Separator: true},
		{Label: "Start at login", Checkable: true},
	}
}

// ids lists every item's ID by its path of labels.
func ids(t *tree) map[string]int32 {
	out := map[string]int32{}
	var walk func(n *node, path string)
	walk = func(n *node, path string) {
		for i, c := range n.children {
			p := path + "/" + labelOf(c, i)
			out[p] = c.id
			walk(c, p)
		}
	}
	walk(t.root, "")
	return out
}

func labelOf(n *node, i int) string {
	if l, ok := n.props["label"].(string); ok {
		return l
	}
	return "sep" + string(rune('0'+i))
}

func TestLabelChangeKeepsIDs(t *testing.T) {
	a := newTree().lay(menuWith("", "beta"))
	b := a.lay(menuWith(" — 2 active", "beta"))
	layout, changes := b.diff(a)
	if layout {
		t.Fatal("a label change was sent as a layout change")
	}
	if a.ids["/model alpha"] != b.ids["/model alpha"] || a.ids["/model alpha/unload"] != b.ids["/model alpha/unload"] {
		t.Fatalf("IDs changed with the labels: %v then %v", a.ids, b.ids)
	}
	want := []propChange{
		{id: b.ids["/model alpha"], set: props{"label": "● alpha — 2 active"}},
		{id: b.ids["/model alpha/unload"], set: props{"label": "Unload — 2 active"}},
	}
	if !reflect.DeepEqual(changes, want) {
		t.Fatalf("changes %+v, want %+v", changes, want)
	}
	if layout, changes := b.lay(menuWith(" — 2 active", "beta")).diff(b); layout || len(changes) != 0 {
		t.Fatalf("the same menu again: layout %v, changes %+v", layout, changes)
	}
}

func TestStructureChangeIsOneLayoutUpdate(t *testing.T) {
	a := newTree().lay(menuWith("", "beta", "gamma"))
	b := a.lay(menuWith("", "gamma"))
	layout, changes := b.diff(a)
	if !layout {
		t.Fatal("an item went away without a layout change")
	}
	if len(changes) != 0 {
		t.Fatalf("property changes %+v, want none", changes)
	}
	before, after := ids(a), ids(b)
	for path, id := range after {
		if old, ok := before[path]; ok && old != id {
			t.Errorf("%s: ID %d became %d", path, old, id)
		}
	}
	// The last available model goes: the placeholder is a new item, the submenu keeps its ID and
	// its children-display.
	c := b.lay(menuWith(""))
	if layout, _ := c.diff(b); !layout {
		t.Fatal("no layout change when the submenu's items changed")
	}
	if c.ids["/available"] != a.ids["/available"] || c.byID[c.ids["/available"]].props["children-display"] != "submenu" {
		t.Fatalf("Available changed: %v", c.byID[c.ids["/available"]])
	}
	// IDs are never reused: a model that comes back gets a new one, so a host cannot confuse it
	// with what it had.
	d := c.lay(menuWith("", "beta"))
	if d.ids["/available/load beta"] == a.ids["/available/load beta"] {
		t.Fatal("a removed item's ID was reused")
	}
}

func TestPropsAndDuplicateKeys(t *testing.T) {
	tr := newTree().lay([]Item{
		{Separator: true}, {Separator: true},
		{Label: "Off", Disabled: true, Checkable: true},
		{Label: "On", Checkable: true, Checked: true},
		{Label: "Sub", Children: []Item{{Label: "x"}}},
	})
	if len(tr.root.children) != 5 || tr.root.children[0].id == tr.root.children[1].id {
		t.Fatalf("separators share an ID: %+v", tr.root.children)
	}
	want := []props{
		{"type": "separator"},
		{"type": "separator"},
		{"label": "Off", "enabled": false, "toggle-type": "checkmark", "toggle-state": int32(0)},
		{"label": "On", "toggle-type": "checkmark", "toggle-state": int32(1)},
		{"label": "Sub", "children-display": "submenu"},
	}
	for i, n := range tr.root.children {
		if !reflect.DeepEqual(n.props, want[i]) {
			t.Errorf("item %d: props %v, want %v", i, n.props, want[i])
		}
	}
	l := layoutOf(tr.root, 1, []string{"label"})
	if len(l.Children) != 5 || len(l.Children[4].Value().(layout).Children) != 0 {
		t.Fatalf("depth 1 layout: %+v", l)
	}
	if p := l.Children[4].Value().(layout).Props; len(p) != 1 || p["label"].Value() != "Sub" {
		t.Fatalf("property filter: %v", p)
	}
}
