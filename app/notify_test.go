package app

import (
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/service"
)

func TestNotifierPressureOncePerBurst(t *testing.T) {
	n := newNotifier()
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	ev := func(model string) service.Event { return service.Event{Kind: "pressure", Model: model} }

	got, ok := n.event(ev("a"), t0)
	if !ok || got.Title != "Memory is low" || !strings.Contains(got.Body, "Unloaded a") {
		t.Fatalf("first pressure unload: %+v %v", got, ok)
	}
	for i, m := range []string{"b", "c"} {
		if got, ok := n.event(ev(m), t0.Add(time.Duration(i+1)*10*time.Second)); ok {
			t.Errorf("pressure unload of %s within 30s notified: %+v", m, got)
		}
	}
	got, ok = n.event(ev("d"), t0.Add(31*time.Second))
	if !ok || !strings.Contains(got.Body, "Unloaded d") || !strings.Contains(got.Body, "Earlier: b, c.") {
		t.Errorf("next burst: %+v %v, want d and the held b, c", got, ok)
	}
}

func TestNotifierFailures(t *testing.T) {
	n := newNotifier()
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	fail := service.Event{Kind: "state", State: service.StateFailed, Model: "qwen", Message: "exit code 1: out of memory"}
	got, ok := n.event(fail, t0)
	if !ok || got != (note{Title: "Model qwen failed", Body: "exit code 1: out of memory"}) {
		t.Fatalf("failure: %+v %v", got, ok)
	}
	if _, ok := n.event(fail, t0.Add(time.Minute)); ok {
		t.Error("a retry's failure a minute later notified again")
	}
	if _, ok := n.event(service.Event{Kind: "state", State: service.StateFailed, Model: "other"}, t0.Add(time.Minute)); !ok {
		t.Error("another model's failure was held back")
	}
	n.event(service.Event{Kind: "state", State: service.StateLoaded, Model: "qwen"}, t0.Add(2*time.Minute))
	if _, ok := n.event(fail, t0.Add(3*time.Minute)); !ok {
		t.Error("failure after a successful load was held back")
	}
	for _, ev := range []service.Event{
		{Kind: "state", State: service.StateLoaded, Model: "a"},
		{Kind: "lease", Model: "a", Active: 3},
		{Kind: "catalog"},
	} {
		if got, ok := n.event(ev, t0); ok {
			t.Errorf("%+v notified: %+v", ev, got)
		}
	}
}

func TestStartupNotes(t *testing.T) {
	s := Snapshot{ListenAddr: "127.0.0.1:8080", Server: service.LlamaServer{Path: "/bin/llama-server"}}
	if got := startupNotes(s); len(got) != 0 {
		t.Errorf("healthy start: %+v", got)
	}
	s.Server.Path, s.Server.Hint = "", "Install it with: brew install llama.cpp"
	s.ListenErr = "127.0.0.1:8080 is already in use"
	got := startupNotes(s)
	if len(got) != 2 || got[0].Title != "llama-server not found" || !strings.Contains(got[0].Body, "brew install llama.cpp") ||
		got[1].Title != "Llamatray is not serving" || !strings.Contains(got[1].Body, "already in use") {
		t.Errorf("notes = %+v", got)
	}
}
