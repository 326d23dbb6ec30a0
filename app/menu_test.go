package app

import (
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/view"
)

const gb = int64(1_000_000_000)

func snap(models ...Model) Snapshot {
	sortModels(models)
	return Snapshot{
		ListenAddr: "127.0.0.1:8080",
		Server:     service.LlamaServer{Path: "/usr/bin/llama-server"},
		Models:     models,
		Budget:     service.Budget{Limit: 16 * gb, Configured: true, ConfiguredLimit: 16 * gb, Used: 6 * gb, Measured: 4 * gb, Free: 10 * gb},
	}
}

func model(id string, st service.State, mod func(*Model)) Model {
	m := Model{Model: view.Model{ModelStatus: service.ModelStatus{ID: id, State: st, EstimateBytes: 4 * gb}, Meta: &catalog.Model{}}}
	if mod != nil {
		mod(&m)
	}
	return m
}

func labels(items []MenuItem) []string {
	var out []string
	for _, it := range items {
		if it.Separator {
			out = append(out, "---")
			continue
		}
		out = append(out, it.Label)
	}
	return out
}

func find(t *testing.T, items []MenuItem, prefix string) MenuItem {
	t.Helper()
	for _, it := range items {
		if strings.HasPrefix(it.Label, prefix) {
			return it
		}
	}
	t.Fatalf("no item starting with %q in %q", prefix, labels(items))
	return MenuItem{}
}

func TestBuildMenuSections(t *testing.T) {
	s := snap(
		model("qwen-7b", service.StateLoaded, func(m *Model) { m.Active = 2; m.MemoryBytes = 4_100_000_000 }),
		model("llama-3b", service.StateSleeping, nil),
		model("gemma-2b", service.StateUnloaded, nil),
		model("phi-mini", service.StateUnloaded, nil),
	)
	s.Autostart = true
	got := labels(BuildMenu(s))
	want := []string{
		"Serving on 127.0.0.1:8080",
		"---",
		"◐ llama-3b",
		"● qwen-7b — 2 active · 3.8 GiB",
		"Available (2)",
		"---",
		"Open Llamatray…",
		"Try it…",
		"Settings…",
		"Open logs folder",
		"Start at login",
		"---",
		"Quit",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("menu:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	menu := BuildMenu(s)
	if hdr := menu[0]; hdr.Action != (Action{Kind: ActCopy, Text: "http://127.0.0.1:8080"}) {
		t.Errorf("header action = %+v, want copy of the URL", hdr.Action)
	}
	if it := find(t, menu, "Start at login"); !it.Checked || it.Action.Kind != ActToggleAutostart {
		t.Errorf("start at login = %+v, want checked toggle", it)
	}
	avail := find(t, menu, "Available")
	if got := labels(avail.Children); strings.Join(got, "|") != "gemma-2b — ~3.7 GiB|phi-mini — ~3.7 GiB" {
		t.Errorf("available = %q", got)
	}
	if a := avail.Children[0].Action; a != (Action{Kind: ActLoad, Model: "gemma-2b"}) {
		t.Errorf("available click = %+v, want load", a)
	}
	if it := find(t, menu, "Quit"); it.Action.Kind != ActQuit {
		t.Errorf("quit action = %+v", it.Action)
	}
}

func TestBuildMenuModelSubmenu(t *testing.T) {
	tests := []struct {
		name  string
		m     Model
		label string   // the model's line
		want  []string // its submenu
		// disabled lists the submenu labels that must be disabled; the others must be enabled.
		disabled []string
	}{
		{
			name:     "idle loaded",
			m:        model("a", service.StateLoaded, func(m *Model) { m.MemoryBytes = 812_000_000 }),
			label:    "● a — 774 MiB",
			want:     []string{"Unload", "Force unload", "Pin", "---", "Copy model ID", "Logs"},
			disabled: []string{"Force unload"},
		},
		{
			name:  "busy",
			m:     model("a", service.StateLoaded, func(m *Model) { m.Active = 2; m.Queued = 1; m.MemoryBytes = 4_100_000_000 }),
			label: "● a — 2 active · 1 queued · 3.8 GiB",
			want:  []string{"Unload — busy, 2 active", "Force unload", "Pin", "---", "Copy model ID", "Logs"},
		},
		{
			name:     "draining",
			m:        model("a", service.StateLoaded, func(m *Model) { m.Active = 1; m.Draining = true; m.MemoryBytes = gb }),
			label:    "● a — 1 active · unloading · 954 MiB",
			want:     []string{"Unloading — draining, 1 active", "Force unload", "Pin", "---", "Copy model ID", "Logs"},
			disabled: []string{"Unloading — draining, 1 active"},
		},
		{
			name:     "pinned sleeping",
			m:        model("a", service.StateSleeping, func(m *Model) { m.Pinned = true }),
			label:    "◐ a — pinned",
			want:     []string{"Unload", "Force unload", "Unpin", "---", "Copy model ID", "Logs"},
			disabled: []string{"Force unload"},
		},
		{
			name:     "loading",
			m:        model("a", service.StateLoading, func(m *Model) { m.Progress = 0.42; m.Queued = 3 }),
			label:    "◌ a — loading 42% · 3 queued",
			want:     []string{"Cancel load", "Force unload", "Pin", "---", "Copy model ID", "Logs"},
			disabled: []string{"Force unload"},
		},
		{
			name:     "stopping",
			m:        model("a", service.StateStopping, func(m *Model) { m.MemoryBytes = 2 * gb }),
			label:    "○ a — stopping · 1.9 GiB",
			want:     []string{"Stopping…", "Force unload", "Pin", "---", "Copy model ID", "Logs"},
			disabled: []string{"Stopping…", "Force unload"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			menu := BuildMenu(snap(tt.m))
			line := menu[2]
			if line.Label != tt.label {
				t.Errorf("line = %q, want %q", line.Label, tt.label)
			}
			if got := labels(line.Children); strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("submenu = %q, want %q", got, tt.want)
			}
			for _, it := range line.Children {
				if it.Separator {
					continue
				}
				wantOff := false
				for _, d := range tt.disabled {
					wantOff = wantOff || d == it.Label
				}
				if it.Disabled != wantOff {
					t.Errorf("%q disabled = %v, want %v", it.Label, it.Disabled, wantOff)
				}
				if !it.Disabled && it.Action.Kind == ActNone {
					t.Errorf("%q is enabled but does nothing", it.Label)
				}
			}
			if c := find(t, line.Children, "Copy model ID"); c.Action != (Action{Kind: ActCopy, Text: "a"}) {
				t.Errorf("copy action = %+v", c.Action)
			}
		})
	}
}

func TestBuildMenuBusyUnloadDrains(t *testing.T) {
	m := model("busy", service.StateLoaded, func(m *Model) { m.Active = 2 })
	sub := BuildMenu(snap(m))[2].Children
	if sub[0].Action != (Action{Kind: ActUnload, Model: "busy"}) {
		t.Errorf("busy unload action = %+v, want a draining unload", sub[0].Action)
	}
	if sub[1].Action != (Action{Kind: ActForceUnload, Model: "busy"}) || sub[1].Disabled {
		t.Errorf("force unload = %+v, want enabled force", sub[1])
	}
}

func TestBuildMenuAvailableMarks(t *testing.T) {
	s := snap(
		model("small", service.StateUnloaded, func(m *Model) { m.EstimateBytes = 2 * gb }),
		model("medium", service.StateUnloaded, func(m *Model) { m.EstimateBytes = 12 * gb }),
		model("huge", service.StateUnloaded, func(m *Model) { m.EstimateBytes = 70 * gb }),
		model("broken", service.StateFailed, func(m *Model) { m.Error = "exit code 1" }),
		model("unknown", service.StateUnloaded, func(m *Model) { m.EstimateBytes = 0 }),
	)
	avail := find(t, BuildMenu(s), "Available")
	tests := []struct {
		label    string
		disabled bool
		action   Action
	}{
		{"✕ broken — ~3.7 GiB · failed, click to retry", false, Action{Kind: ActLoad, Model: "broken"}},
		{"⚠ huge — ~65 GiB · won't fit in 15 GiB", true, Action{Kind: ActLoad, Model: "huge"}},
		{"medium — ~11 GiB · unloads others", false, Action{Kind: ActLoad, Model: "medium"}},
		{"small — ~1.9 GiB", false, Action{Kind: ActLoad, Model: "small"}},
		{"unknown", false, Action{Kind: ActLoad, Model: "unknown"}},
	}
	if len(avail.Children) != len(tests) {
		t.Fatalf("available = %q", labels(avail.Children))
	}
	for i, tt := range tests {
		it := avail.Children[i]
		if it.Label != tt.label || it.Disabled != tt.disabled || it.Action != tt.action {
			t.Errorf("item %d = {%q disabled=%v %+v}, want {%q disabled=%v %+v}", i, it.Label, it.Disabled, it.Action, tt.label, tt.disabled, tt.action)
		}
	}
}

func TestBuildMenuProblems(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Snapshot)
		want  []string // the lines before the first separator
		empty string   // the Available submenu's only line
	}{
		{"no models", func(s *Snapshot) { s.Models = nil }, []string{"Serving on 127.0.0.1:8080"}, "No models found — Get models… in the window"},
		{"port in use", func(s *Snapshot) { s.ListenErr = "127.0.0.1:8080 is in use" },
			[]string{"Not serving: 127.0.0.1:8080 is in use"}, "No other models"},
		{"no llama-server", func(s *Snapshot) { s.Server.Path = "" },
			[]string{"Serving on 127.0.0.1:8080", "llama-server not found — Install llama-server…"}, "No other models"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snap(model("a", service.StateLoaded, nil))
			tt.edit(&s)
			menu := BuildMenu(s)
			var head []string
			for _, it := range menu {
				if it.Separator {
					break
				}
				head = append(head, it.Label)
			}
			if strings.Join(head, "|") != strings.Join(tt.want, "|") {
				t.Errorf("header = %q, want %q", head, tt.want)
			}
			avail := find(t, menu, "Available")
			if len(avail.Children) != 1 || avail.Children[0].Label != tt.empty || !avail.Children[0].Disabled {
				t.Errorf("available = %+v, want one disabled %q", avail.Children, tt.empty)
			}
			if tt.name == "no models" {
				if it := find(t, menu, "No models loaded"); !it.Disabled {
					t.Error("'No models loaded' should be disabled")
				}
			}
		})
	}
}

func TestTrayIcon(t *testing.T) {
	tests := []struct {
		name string
		s    Snapshot
		want IconState
	}{
		{"idle", snap(model("a", service.StateLoaded, nil)), IconIdle},
		{"serving", snap(model("a", service.StateLoaded, func(m *Model) { m.Active = 1 })), IconServing},
		{"loading beats serving", snap(model("a", service.StateLoaded, func(m *Model) { m.Active = 1 }), model("b", service.StateLoading, nil)), IconLoading},
		{"failed model", snap(model("a", service.StateFailed, nil), model("b", service.StateLoading, nil)), IconError},
		{"port in use", func() Snapshot { s := snap(); s.ListenErr = "in use"; return s }(), IconError},
		{"no llama-server", func() Snapshot { s := snap(); s.Server.Path = ""; return s }(), IconError},
	}
	for _, tt := range tests {
		if got := TrayIcon(tt.s); got != tt.want {
			t.Errorf("%s: icon = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Downloads from the Hub stand in the menu's header with their progress, keyed by model, and open
// the window.
func TestBuildMenuDownloads(t *testing.T) {
	s := snap(model("a", service.StateLoaded, nil))
	s.Downloads = []hub.PullStatus{
		{Model: "org/big-GGUF:Q4_K_M", Progress: hub.Progress{Done: 3 << 30, Total: 4 << 30}},
		{Model: "org/tiny-GGUF:Q8_0"},
	}
	menu := BuildMenu(s)
	var head []MenuItem
	for _, it := range menu {
		if it.Separator {
			break
		}
		head = append(head, it)
	}
	want := []string{"Serving on 127.0.0.1:8080", "⇣ org/big-GGUF:Q4_K_M — 75% of 4.0 GiB", "⇣ org/tiny-GGUF:Q8_0 — starting"}
	if len(head) != len(want) {
		t.Fatalf("header = %+v, want %q", head, want)
	}
	for i, w := range want {
		if head[i].Label != w {
			t.Errorf("header[%d] = %q, want %q", i, head[i].Label, w)
		}
	}
	for _, it := range head[1:] {
		if it.Action.Kind != ActOpenWindow || !strings.HasPrefix(it.Key, "download ") {
			t.Errorf("download entry %+v: want a keyed entry that opens the window", it)
		}
	}
	// The key stays while the label counts up: the tray updates the label, not the layout.
	s.Downloads[0].Progress.Done = 4 << 30
	if again := BuildMenu(s); again[1].Key != head[1].Key || again[1].Label == head[1].Label {
		t.Errorf("progress: key %q → %q, label %q → %q", head[1].Key, again[1].Key, head[1].Label, again[1].Label)
	}
}

func TestDownloadsFrom(t *testing.T) {
	now := time.Now()
	pulls := []hub.PullStatus{ // newest first, as hub.Manager.List gives them
		{Model: "o/c:Q8_0", State: hub.StateDownloading, Started: now, Progress: hub.Progress{Done: 1, Total: 2}},
		{Model: "o/b:Q8_0", State: hub.StateDownloaded, Started: now.Add(-time.Minute)},
		{Model: "o/a:Q8_0", State: hub.StateDownloading, Started: now.Add(-2 * time.Minute)},
	}
	got := downloadsFrom(pulls)
	if len(got) != 2 || got[0].Model != "o/a:Q8_0" || got[1].Model != "o/c:Q8_0" || got[1].Progress.Done != 1 || got[1].Progress.Total != 2 {
		t.Errorf("downloadsFrom = %+v, want the two running pulls, oldest first", got)
	}
}
