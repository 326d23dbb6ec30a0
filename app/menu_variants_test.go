package app

import (
	"testing"

	"github.com/llamatray/llamatray/router/service"
)

// keyed finds the item whose tray identity (itemKey) is key.
func keyed(t *testing.T, items []MenuItem, key string) MenuItem {
	t.Helper()
	for _, it := range items {
		if itemKey(it) == key {
			return it
		}
	}
	t.Fatalf("no item keyed %q in %q", key, labels(items))
	return MenuItem{}
}

// distinctKeys fails when two siblings share a tray identity: the tray would tell them apart only
// by their position, and give one's ID to the other when the menu changes.
func distinctKeys(t *testing.T, where string, items []MenuItem) {
	t.Helper()
	seen := map[string]string{}
	for _, it := range items {
		k := itemKey(it)
		if k == "" {
			continue
		}
		if other, ok := seen[k]; ok {
			t.Errorf("%s: %q and %q share the key %q", where, other, it.Label, k)
		}
		seen[k] = it.Label
	}
}

// The variants of one file are models of their own in the tray: each has its entry, loaded from
// Available and unloaded from its own submenu, with an identity that is not its model's and that
// stays while its label changes.
func TestBuildMenuVariants(t *testing.T) {
	first := BuildMenu(snap(
		model("qwen", service.StateLoaded, func(m *Model) { m.Active = 1; m.MemoryBytes = 4 << 30 }),
		model("qwen@32k", service.StateSleeping, nil),
		model("qwen@8k", service.StateUnloaded, nil),
	))
	distinctKeys(t, "top level", first)
	base := keyed(t, first, "model qwen")
	long := keyed(t, first, "model qwen@32k")
	if base.Label != "● qwen — 1 active · 4.0 GiB" || long.Label != "◐ qwen@32k" {
		t.Fatalf("entries %q and %q", base.Label, long.Label)
	}
	for _, m := range []MenuItem{base, long} {
		id := m.Key[len("model "):]
		distinctKeys(t, id+"'s submenu", m.Children)
		if u := find(t, m.Children, "Unload"); u.Action != (Action{Kind: ActUnload, Model: id}) {
			t.Errorf("%s's Unload does %+v", id, u.Action)
		}
		if c := find(t, m.Children, "Copy model ID"); c.Action.Text != id {
			t.Errorf("%s's Copy model ID copies %q", id, c.Action.Text)
		}
		if l := find(t, m.Children, "Logs"); l.Action.Model != id {
			t.Errorf("%s's Show logs shows %q", id, l.Action.Model)
		}
	}
	avail := find(t, first, "Available")
	distinctKeys(t, "Available", avail.Children)
	short := find(t, avail.Children, "qwen@8k")
	if short.Action != (Action{Kind: ActLoad, Model: "qwen@8k"}) || short.Disabled {
		t.Fatalf("qwen@8k in Available: %+v", short)
	}
	shortKey := itemKey(short)

	// The base gets busier and the short variant fails: labels change, identities do not.
	second := BuildMenu(snap(
		model("qwen", service.StateLoaded, func(m *Model) { m.Active = 3; m.MemoryBytes = 4 << 30 }),
		model("qwen@32k", service.StateSleeping, nil),
		model("qwen@8k", service.StateFailed, nil),
	))
	if got := keyed(t, second, "model qwen").Label; got != "● qwen — 3 active · 4.0 GiB" {
		t.Errorf("qwen's entry %q", got)
	}
	keyed(t, second, "model qwen@32k")
	failed := keyed(t, find(t, second, "Available").Children, shortKey)
	if failed.Label != "✕ qwen@8k — ~3.7 GiB · failed, click to retry" || failed.Action.Model != "qwen@8k" {
		t.Errorf("the failed variant %+v", failed)
	}

	// The variant loaded while its model is unloaded: the variant has the running entry, the model
	// is loaded from Available; neither takes the other's identity.
	third := BuildMenu(snap(
		model("qwen", service.StateUnloaded, nil),
		model("qwen@32k", service.StateLoaded, func(m *Model) { m.MemoryBytes = 6 * gb }),
	))
	distinctKeys(t, "top level", third)
	for _, it := range third {
		if it.Key == "model qwen" {
			t.Errorf("unloaded qwen has a running entry %q", it.Label)
		}
	}
	if u := find(t, keyed(t, third, "model qwen@32k").Children, "Unload"); u.Action.Model != "qwen@32k" {
		t.Errorf("qwen@32k's Unload unloads %q", u.Action.Model)
	}
	load := find(t, find(t, third, "Available").Children, "qwen")
	if load.Action != (Action{Kind: ActLoad, Model: "qwen"}) || itemKey(load) == shortKey {
		t.Errorf("qwen in Available: %+v, key %q", load, itemKey(load))
	}
}
