package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/testbed"
)

func windowSnapshot() Snapshot {
	s := snap(
		model("qwen-7b", service.StateLoaded, func(m *Model) {
			m.Active = 2
			m.MemoryBytes = 4_100_000_000
			m.Meta.Quantization = "Q4_K_M"
			m.Meta.Parameters = 7e9
			m.Meta.Architecture = "qwen2"
			m.CtxSize = 4096
		}),
		model("llama-3b", service.StateSleeping, func(m *Model) { m.Pinned = true }),
		model("gemma-2b", service.StateUnloaded, func(m *Model) { m.Meta.SizeBytes = 1_600_000_000; m.Path = "/models/gemma-2b.gguf" }),
		model("broken", service.StateFailed, func(m *Model) { m.Error = "llama-server exited with code 1: unknown model architecture" }),
		model("huge", service.StateUnloaded, func(m *Model) { m.EstimateBytes = 90 * gb }),
	)
	s.Budget.SystemTotal, s.Budget.SystemAvailable, s.Budget.Reserve = 32*gb, 20*gb, gb
	s.ModelDirs = []string{"/models"}
	s.LogDir = "/logs"
	return s
}

func TestModelsWindowGroupsRowsAndFilter(t *testing.T) {
	u, _, l := newTestUI(t, windowSnapshot())
	l.wait(func() { u.models = newModelsWindow(u); u.models.show() })
	c := u.models.win.Content()
	read := func(o fyne.CanvasObject) (out []string) { l.wait(func() { out = texts(o) }); return }
	has := func(o fyne.CanvasObject, want string) bool {
		for _, x := range read(o) {
			if strings.Contains(x, want) {
				return true
			}
		}
		return false
	}

	got := strings.Join(read(u.models.list), "\n")
	for _, want := range []string{
		"Loaded (1)", "qwen-7b", "loaded", "2 active · 3.8 GiB measured · ctx 4096 · Q4_K_M · 7B qwen2", "[Unload (busy, 2 active)]",
		"Sleeping (1)", "llama-3b", "sleeping · pinned", "[Unpin]",
		"Available (3)", "gemma-2b", "needs ~3.7 GiB · 1.5 GiB file", "[Load]",
		"broken", "failed", "llama-server exited with code 1: unknown model architecture", "[Retry]",
		"huge", "Needs ~84 GiB but the memory budget is 15 GiB",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("window lacks %q; it shows:\n%s", want, got)
		}
	}
	order := []string{"Loaded (1)", "Sleeping (1)", "Available (3)"}
	last := -1
	for _, h := range order {
		i := strings.Index(got, h)
		if i < last {
			t.Errorf("group %q out of order", h)
		}
		last = i
	}
	if !has(c, "Models reserve 5.6 GiB (3.7 GiB in use) of the budget 15 GiB") {
		t.Errorf("memory legend missing: %q", read(c))
	}
	// A model that cannot fit cannot be loaded from its row.
	for _, r := range u.models.rows {
		if r.ID == "huge" && !r.Buttons[0].Disabled {
			t.Error("Load of a model larger than the budget is enabled")
		}
	}

	l.wait(func() { test.Type(u.models.filter, "GEM") })
	got = strings.Join(read(u.models.list), "\n")
	if !strings.Contains(got, "gemma-2b") || strings.Contains(got, "qwen-7b") || strings.Contains(got, "Loaded (") {
		t.Errorf("filter \"GEM\" shows:\n%s", got)
	}
	l.wait(func() { u.models.filter.SetText("q4_k") })
	if !has(u.models.list, "qwen-7b") || has(u.models.list, "gemma-2b") {
		t.Errorf("filter by quantization shows %q", read(u.models.list))
	}
	l.wait(func() { u.models.filter.SetText("nothing-like-this") })
	if !has(u.models.list, "No models match “nothing-like-this”.") {
		t.Errorf("no-match state missing: %q", read(u.models.list))
	}
}

func TestModelsWindowActions(t *testing.T) {
	u, fb, l := newTestUI(t, windowSnapshot())
	l.wait(func() { u.models = newModelsWindow(u); u.models.show() })
	tap := func(label string) { l.wait(func() { test.Tap(findButton(t, u.models.list, label)) }) }

	tap("Unload (busy, 2 active)")
	fb.waitCall(t, "unload qwen-7b force=false")
	tap("Load")
	fb.waitCall(t, "load gemma-2b")
	tap("Unpin")
	fb.waitCall(t, "pin llama-3b false")
	tap("Retry")
	fb.waitCall(t, "load broken")

	// A new snapshot from the engine replaces the rows.
	s := windowSnapshot()
	s.Models[0].State, s.Models[0].Progress = service.StateLoading, 0.5 // broken → loading
	sortModels(s.Models)
	fb.setSnapshot(s)
	u.pull()
	l.wait(func() {
		if !hasText(u.models.list, "loading 50%") || !hasText(u.models.list, "[Cancel]") {
			t.Errorf("loading row missing: %q", texts(u.models.list))
		}
	})
}

func TestModelsWindowEmptyStates(t *testing.T) {
	s := Snapshot{ListenAddr: "127.0.0.1:8080", ModelDirs: []string{"/home/ann/models", "/home/ann/.cache/llama.cpp"},
		Server: service.LlamaServer{Hint: "Install llama.cpp with: brew install llama.cpp"}, ListenErr: "127.0.0.1:8080 is already in use"}
	u, fb, l := newTestUI(t, s)
	l.wait(func() { u.models = newModelsWindow(u); u.models.show() })
	c := u.models.win.Content()
	l.wait(func() {
		for _, want := range []string{
			"#No models found", "/home/ann/models", "/home/ann/.cache/llama.cpp", "[Add folder…]", "[Add model…]",
			"llama-server not found", "brew install llama.cpp", "[Locate…]",
			"Not serving", "127.0.0.1:8080 is already in use",
		} {
			if !hasText(c, want) {
				t.Errorf("empty window lacks %q; it shows %q", want, texts(c))
			}
		}
	})
	// Once llama-server is located and models appear, the problems go away.
	s.Server.Path, s.ListenErr = "/usr/bin/llama-server", ""
	s.Models = []Model{model("a", service.StateUnloaded, nil)}
	fb.setSnapshot(s)
	u.pull()
	l.wait(func() {
		if hasText(c, "#No models found") || hasText(c, "llama-server not found") || hasText(c, "Not serving") {
			t.Errorf("problems still shown: %q", texts(c))
		}
	})
}

func TestTrayMenuAdapter(t *testing.T) {
	u, fb, l := newTestUI(t, windowSnapshot())
	var items []*fyne.MenuItem
	l.wait(func() { items = u.fyneItems(BuildMenu(u.snap)) })
	if items[0].Label != "Serving on 127.0.0.1:8080" {
		t.Fatalf("first item %q", items[0].Label)
	}
	l.wait(items[0].Action)
	if got := u.app.Clipboard().Content(); got != "http://127.0.0.1:8080" {
		t.Errorf("clipboard = %q after clicking the header", got)
	}
	var qwen *fyne.MenuItem
	for _, it := range items {
		if strings.HasPrefix(it.Label, "● qwen-7b") {
			qwen = it
		}
	}
	if qwen == nil || qwen.ChildMenu == nil {
		t.Fatal("no submenu for the loaded model")
	}
	force := qwen.ChildMenu.Items[1]
	if force.Label != "Force unload" || force.Disabled {
		t.Fatalf("second submenu item = %+v", force)
	}
	l.wait(force.Action)
	fb.waitCall(t, "unload qwen-7b force=true")
	last := items[len(items)-1]
	if last.Label != "Quit" || !last.IsQuit {
		t.Errorf("last item = %+v, want Quit marked IsQuit", last)
	}
	for _, it := range items {
		if it.Label == "Start at login" {
			l.wait(it.Action)
		}
	}
	testbed.WaitFor(t, 10*time.Second, "autostart on", func() bool { return u.auto.enabled() })
}

func TestNotificationsFromEvents(t *testing.T) {
	u, fb, _ := newTestUI(t, windowSnapshot())
	sent := make(chan *fyne.Notification, 4)
	u.send = func(n *fyne.Notification) { sent <- n }
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { u.watch(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	fb.events <- service.Event{Kind: "pressure", Model: "qwen-7b"}
	fb.events <- service.Event{Kind: "pressure", Model: "llama-3b"} // same burst: no second notification
	fb.events <- service.Event{Kind: "state", State: service.StateFailed, Model: "broken", Message: "exit code 1"}
	var got []string
	for len(got) < 2 {
		select {
		case n := <-sent:
			got = append(got, n.Title+": "+n.Content)
		case <-time.After(10 * time.Second):
			t.Fatalf("notifications so far: %q", got)
		}
	}
	if !strings.HasPrefix(got[0], "Memory is low: Unloaded qwen-7b") || got[1] != "Model broken failed: exit code 1" {
		t.Errorf("notifications = %q", got)
	}
	select {
	case n := <-sent:
		t.Errorf("extra notification %q", n.Title)
	default:
	}
}

func TestLogWindowFollowsOutput(t *testing.T) {
	u, fb, l := newTestUI(t, windowSnapshot())
	fb.setLogs("qwen-7b", "main: loading model", "main: model loaded")
	var lw *logWindow
	var text string
	l.wait(func() { u.showLogs("qwen-7b"); lw = u.logs["qwen-7b"]; text = lw.text.Text() })
	if text != "main: loading model\nmain: model loaded" {
		t.Errorf("log view = %q", text)
	}
	fb.setLogs("qwen-7b", "main: loading model", "main: model loaded", "srv: request 200")
	testbed.WaitFor(t, 10*time.Second, "the new log line", func() bool {
		l.wait(func() { text = lw.text.Text() })
		return strings.HasSuffix(text, "srv: request 200")
	})
	l.wait(func() {
		lw.win.Close()
		if _, open := u.logs["qwen-7b"]; open {
			t.Error("closed log window still registered")
		}
	})
}
