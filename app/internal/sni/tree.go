package sni

import (
	"maps"
	"slices"
	"strconv"
)

// Item is one menu entry. Items are matched to the previous menu by Key among their siblings: an
// item whose key stays keeps its D-Bus ID, so a changed label is sent as a property update and the
// host keeps its widgets (and any open submenu).
type Item struct {
	Key       string // identity among its siblings; when empty, the label is the identity
	Label     string
	Disabled  bool
	Checkable bool // shown with a check box
	Checked   bool
	Separator bool
	Children  []Item // a submenu when not empty
	Click     func() // run on its own goroutine when the item is clicked; nil for none
}

// props are an item's com.canonical.dbusmenu properties, only those that differ from the
// defaults the specification gives (the defaults are not sent). Values are string, bool or int32.
type props map[string]any

// node is one item of a laid-out menu, with its D-Bus ID.
type node struct {
	id       int32
	props    props
	children []*node
	click    func()
}

// tree is a laid-out menu: IDs are stable per path of keys from the root.
type tree struct {
	root *node
	byID map[int32]*node
	ids  map[string]int32 // path of keys → ID, for the items in this tree
	next int32            // the next unused ID; never reused, so a client cannot confuse old and new
}

func newTree() *tree { return (&tree{next: 1}).lay(nil) }

func propsOf(it Item) props {
	p := props{}
	if it.Separator {
		p["type"] = "separator"
		return p
	}
	p["label"] = it.Label
	if it.Disabled {
		p["enabled"] = false
	}
	if it.Checkable {
		p["toggle-type"] = "checkmark"
		p["toggle-state"] = int32(0)
		if it.Checked {
			p["toggle-state"] = int32(1)
		}
	}
	if len(it.Children) > 0 {
		p["children-display"] = "submenu"
	}
	return p
}

// lay lays out items, keeping the IDs that prev gave to the same paths.
func (prev *tree) lay(items []Item) *tree {
	t := &tree{byID: map[int32]*node{}, ids: map[string]int32{}, next: prev.next}
	t.root = &node{id: 0, props: props{"children-display": "submenu"}}
	t.byID[0] = t.root
	t.root.children = t.layChildren(prev, "", items)
	return t
}

func (t *tree) layChildren(prev *tree, parent string, items []Item) []*node {
	out := make([]*node, 0, len(items))
	seen := map[string]int{}
	for _, it := range items {
		key := it.Key
		switch {
		case key != "":
		case it.Separator:
			key = "\x00separator"
		default:
			key = "\x00label " + it.Label
		}
		if n := seen[key]; n > 0 {
			seen[key] = n + 1
			key += "\x00#" + strconv.Itoa(n)
		} else {
			seen[key] = 1
		}
		path := parent + "/" + key
		id, ok := prev.ids[path]
		if !ok {
			id = t.next
			t.next++
		}
		n := &node{id: id, props: propsOf(it), click: it.Click}
		t.ids[path] = id
		t.byID[id] = n
		n.children = t.layChildren(prev, path, it.Children)
		out = append(out, n)
	}
	return out
}

// propChange is one item's property update: the properties set or changed, and those removed
// (back to their defaults).
type propChange struct {
	id      int32
	set     props
	removed []string
}

// diff says what changed from old to t: whether any item's list of children differs (a layout
// change, which the client refetches), and the property changes of the items in both.
func (t *tree) diff(old *tree) (layout bool, changes []propChange) {
	for _, id := range slices.Sorted(maps.Keys(t.byID)) {
		n := t.byID[id]
		o, ok := old.byID[id]
		if !ok {
			layout = true
			continue
		}
		if !slices.EqualFunc(n.children, o.children, func(a, b *node) bool { return a.id == b.id }) {
			layout = true
		}
		c := propChange{id: id, set: props{}}
		for k, v := range n.props {
			if ov, ok := o.props[k]; !ok || ov != v {
				c.set[k] = v
			}
		}
		for _, k := range slices.Sorted(maps.Keys(o.props)) {
			if _, ok := n.props[k]; !ok {
				c.removed = append(c.removed, k)
			}
		}
		if len(c.set) > 0 || len(c.removed) > 0 {
			changes = append(changes, c)
		}
	}
	return layout, changes // an item that went away changed its parent's children
}
