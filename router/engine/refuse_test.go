package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// Requests queued for a model whose settings come to refuse its loads (Settings.Refuse: a draft
// model removed meanwhile) fail with that reason as soon as the engine takes the settings in,
// and no child of it starts, not even once memory comes back.
func TestRefuseFailsQueuedRequests(t *testing.T) {
	var refuse atomic.Value
	refuse.Store("")
	h := newHarness(t, func(o *Options) {
		o.MemoryLimit, o.Reserve = 0, 0
		o.Settings = func(string) Settings { return Settings{CtxSize: 512, Refuse: refuse.Load().(string)} }
	}, fakeModel{id: "a", estMiB: 100})
	h.probe.avail.Store(50 << 20) // other programs hold almost everything for now
	h.e.sample(context.Background())
	ac := h.acquireAsync(context.Background(), "a")
	testbedWaitQueued(h, "a", 1)

	refuse.Store("draft model d is gone")
	h.e.SyncCatalog()
	select {
	case r := <-ac:
		var le *LoadError
		if !errors.As(r.err, &le) || le.Reason != "draft model d is gone" {
			t.Fatalf("queued request: %v, want the refusal", r.err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the queued request still waits for a model its settings refuse")
	}
	h.probe.avail.Store(32 << 30)
	h.e.sample(context.Background())
	if st, _ := h.e.Model("a"); st.State != StateUnloaded {
		t.Fatalf("a is %s, want no child", st.State)
	}
	for _, ev := range h.eventsFor("a") {
		if ev.State == StateLoading {
			t.Fatalf("a child of a refused model started: %+v", ev)
		}
	}
}
