package app

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/service"
)

// waitSnapshot is a room for one model: alpha streams two answers, beta waits for it first in line,
// gamma waits behind beta.
func waitSnapshot(alphaActive int) Snapshot {
	since := time.Date(2026, 1, 1, 12, 3, 4, 0, time.Local)
	s := snap(
		model("alpha", service.StateLoaded, func(m *Model) {
			m.Active, m.MemoryBytes, m.Meta.Quantization, m.Meta.Parameters, m.Meta.Architecture, m.CtxSize = alphaActive, 5_100_000_000, "Q4_K_M", 7e9, "qwen2", 4096
		}),
		model("beta", service.StateUnloaded, func(m *Model) {
			m.Queued, m.EstimateBytes, m.Meta.SizeBytes, m.Meta.Quantization, m.Meta.Parameters, m.Meta.Architecture = 1, 5_476_083_302, 4_700_000_000, "Q4_K_M", 8e9, "llama"
			m.Wait = &service.WaitReason{Kind: service.WaitBusy, Position: 1, Since: since, BusySince: since, Need: 5_476_083_302, Free: 2 << 30,
				Holders: []service.WaitModel{{ID: "alpha", State: service.StateLoaded, Active: alphaActive}}}
		}),
		model("gamma", service.StateUnloaded, func(m *Model) {
			m.Queued, m.EstimateBytes, m.Meta.SizeBytes, m.Meta.Quantization, m.Meta.Parameters, m.Meta.Architecture = 2, 3_000_000_000, 2_700_000_000, "Q8_0", 3e9, "qwen2"
			m.Wait = &service.WaitReason{Kind: service.WaitBehind, Position: 2, Since: since.Add(5 * time.Second), Need: 3_000_000_000, Free: 2 << 30, Behind: "beta"}
		}),
	)
	s.Budget.SystemTotal, s.Budget.SystemAvailable, s.Budget.Reserve = 32*gb, 20*gb, gb
	s.ModelDirs = []string{"/models"}
	s.LogDir = "/logs"
	return s
}

// While requests wait, the models window's row says why, in the words of every surface.
func TestModelsWindowShowsWhyItWaits(t *testing.T) {
	u, _, l := newTestUI(t, waitSnapshot(2))
	l.wait(func() { u.models = newModelsWindow(u); u.models.show() })
	var got string
	l.wait(func() { got = strings.Join(texts(u.models.list), "\n") })
	for _, want := range []string{
		"beta\nwaiting\n1 queued · needs ~5.1 GiB · 4.4 GiB file",
		"waiting: every model is busy since 12:03:04 (alpha 2 requests)",
		"gamma\nwaiting\n2 queued",
		"waiting: 2nd in line for 2.8 GiB (2.0 GiB free), behind beta",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("window lacks %q; it shows:\n%s", want, got)
		}
	}
	if strings.Contains(got, "alpha\nloaded\n2 active · 4.7 GiB measured · ctx 4096 · Q4_K_M · 7B qwen2\nwaiting") {
		t.Error("alpha, with nothing queued, shows a reason")
	}
	shoot(t, l, u.models.win, "waiting")

	// The reason follows the engine: alpha's second stream ends.
	l.wait(func() { u.models.update(waitSnapshot(1)) })
	l.wait(func() { got = strings.Join(texts(u.models.list), "\n") })
	if !strings.Contains(got, "waiting: every model is busy since 12:03:04 (alpha 1 request)") {
		t.Errorf("after alpha's second stream ended the window shows:\n%s", got)
	}
}

// keys is every item's identity, as the tray matches items to the ones it showed, by path.
func keys(items []MenuItem, path string) []string {
	var out []string
	for i, it := range items {
		k := itemKey(it)
		if k == "" {
			k = "#" + string(rune('0'+i)) + " " + it.Label
		}
		out = append(out, path+"/"+k)
		out = append(out, keys(it.Children, path+"/"+k)...)
	}
	return out
}

// The tray says why a model waits in its label; as the reason changes, only labels change: every
// item keeps its identity, so the tray sends label updates and never renumbers the menu.
func TestTrayLabelSaysWhyItWaits(t *testing.T) {
	before, after := BuildMenu(waitSnapshot(2)), BuildMenu(waitSnapshot(1))
	avail := find(t, before, "Available").Children
	if got := find(t, avail, "◌ beta").Label; got != "◌ beta — waiting: every model is busy since 12:03:04 (alpha 2 requests)" {
		t.Errorf("beta: %q", got)
	}
	if got := find(t, avail, "◌ gamma").Label; got != "◌ gamma — waiting: 2nd in line for 2.8 GiB (2.0 GiB free), behind beta" {
		t.Errorf("gamma: %q", got)
	}
	if got := find(t, find(t, after, "Available").Children, "◌ beta").Label; !strings.HasSuffix(got, "(alpha 1 request)") {
		t.Errorf("beta after alpha's second stream: %q", got)
	}
	if kb, ka := keys(before, ""), keys(after, ""); !slices.Equal(kb, ka) {
		t.Errorf("item identities changed with the reason:\n%q\n%q", kb, ka)
	}

	// A running model that waits (stopping, then loading again) says so in its own label.
	s := waitSnapshot(1)
	s.Models[1].State = service.StateStopping
	s.Models[1].Wait = &service.WaitReason{Kind: service.WaitStopping, Position: 1}
	if got := find(t, BuildMenu(s), "○ beta").Label; got != "○ beta — waiting: 1st in line; its last run is stopping, then it loads again · 5.1 GiB" {
		t.Errorf("stopping beta: %q", got)
	}
}
