package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
)

// Starvation guard: a queued load that waited FairWait makes the busy LRU model drain, even while
// new requests for it keep arriving.
func TestFairWaitDrainsBusyModel(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MemoryLimit = 150 * mib; o.FairWait = 300 * time.Millisecond },
		fakeModel{id: "a", estMiB: 100, knobs: big}, fakeModel{id: "b", estMiB: 100, knobs: big})
	la, err := h.e.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	bc := h.acquireAsync(context.Background(), "b")
	testbed.WaitFor(t, 10*time.Second, "a to drain", func() bool {
		st, _ := h.e.Model("a")
		return st.Draining
	})
	// A new request for a now waits instead of taking a lease.
	ctx, cancel := context.WithCancel(context.Background())
	ac := h.acquireAsync(ctx, "a")
	testbedWaitQueued(h, "a", 1)
	la.Release()
	rb := <-bc
	if rb.err != nil {
		t.Fatal(rb.err)
	}
	select {
	case r := <-ac:
		t.Fatalf("a served while b holds the only room: %+v", r)
	default:
	}
	rb.lease.Release()
	r := <-ac
	cancel()
	if r.err != nil {
		t.Fatalf("a after b: %v", r.err)
	}
	r.lease.Release()
}

// Memory pressure unloads idle unpinned models, never a leased or pinned one.
func TestPressureUnloadsIdleOnly(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Reserve = 1 << 30 },
		fakeModel{id: "busy", estMiB: 10}, fakeModel{id: "idle", estMiB: 10}, fakeModel{id: "pinned", estMiB: 10, pinned: true})
	for _, id := range []string{"busy", "idle", "pinned"} {
		if err := h.e.Load(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	l, err := h.e.Acquire(context.Background(), "busy")
	if err != nil {
		t.Fatal(err)
	}
	h.probe.avail.Store(512 << 20) // another program grew: 512 MiB available, 1 GiB reserve
	h.waitState("idle", 10*time.Second, StateUnloaded)
	if st, _ := h.e.Model("busy"); st.State != StateLoaded {
		t.Fatalf("busy is %s", st.State)
	}
	if st, _ := h.e.Model("pinned"); st.State != StateLoaded {
		t.Fatalf("pinned is %s", st.State)
	}
	found := false
	for _, ev := range h.eventsFor("idle") {
		found = found || ev.Kind == "pressure"
	}
	if !found {
		t.Fatal("no pressure event")
	}
	l.Release()
	h.waitState("busy", 10*time.Second, StateUnloaded)
	h.probe.avail.Store(32 << 30)
	if st, _ := h.e.Model("pinned"); st.State != StateLoaded {
		t.Fatalf("pinned is %s", st.State)
	}
}

// A crash while loaded fails the model; requests during the backoff get the load error at once; the
// next request after the backoff loads it again.
func TestCrashBackoffRecovery(t *testing.T) {
	h := newHarness(t, nil, fakeModel{id: "a", estMiB: 10})
	l, err := h.e.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := leaseClient(l).Post(l.URL.String()+"/fake/crash", "application/json", nil)
	if err == nil {
		resp.Body.Close()
	}
	st := h.waitState("a", 10*time.Second, StateFailed)
	if st.ExitCode == nil || *st.ExitCode == 0 || st.NextRetry.IsZero() {
		t.Fatalf("failed status %+v", st)
	}
	if st.Active != 1 {
		t.Fatalf("active %d, want the crashed request's lease still counted", st.Active)
	}
	l.Release()
	if st, _ := h.e.Model("a"); st.Active != 0 {
		t.Fatalf("active %d after release", st.Active)
	}
	_, err = h.e.Acquire(context.Background(), "a")
	var le *LoadError
	if !errors.As(err, &le) || le.RetryAt.IsZero() {
		t.Fatalf("during backoff: %v", err)
	}
	testbed.WaitFor(t, 5*time.Second, "backoff to pass", func() bool { return time.Now().After(le.RetryAt) })
	l2, err := h.e.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatalf("after backoff: %v", err)
	}
	l2.Release()
}

func TestLoadFailureReportsLog(t *testing.T) {
	h := newHarness(t, nil, fakeModel{id: "bad", estMiB: 10, knobs: map[string]any{"fail_load": true}})
	err := h.e.Load(context.Background(), "bad")
	var le *LoadError
	if !errors.As(err, &le) || le.ExitCode == nil || len(le.LogTail) == 0 {
		t.Fatalf("err %#v", err)
	}
}

func TestNoServer(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Binary = ""; o.BinaryHint = "apt install llama.cpp-tools" }, fakeModel{id: "a", estMiB: 10})
	_, err := h.e.Acquire(context.Background(), "a")
	var ne *NoServerError
	if !errors.As(err, &ne) || ne.Hint == "" {
		t.Fatalf("err %v", err)
	}
}

func TestSleepWakeAndIdleUnload(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.Settings = func(string) Settings { return Settings{IdleSleep: time.Second, IdleUnload: 4 * time.Second} }
	}, fakeModel{id: "a", estMiB: 10})
	if err := h.e.Load(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	h.waitState("a", 10*time.Second, StateSleeping)
	l, err := h.e.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"a","messages":[{"role":"user","content":"hi"}]}`
	resp, err := leaseClient(l).Post(l.URL.String()+"/v1/chat/completions", "application/json", stringsReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h.waitState("a", 10*time.Second, StateLoaded)
	l.Release()
	st := h.waitState("a", 15*time.Second, StateUnloaded)
	if st.Active != 0 {
		t.Fatalf("active %d", st.Active)
	}
}

// The measured footprint is learned, persisted, and preferred over the estimate by the next engine.
func TestLearnedFootprint(t *testing.T) {
	h := newHarness(t, nil, fakeModel{id: "a", estMiB: 1, knobs: map[string]any{"hold_mb": 64}})
	if err := h.e.Load(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	testbed.WaitFor(t, 10*time.Second, "footprint learned", func() bool {
		st, _ := h.e.Model("a")
		return st.LearnedBytes >= 64*mib && st.MemoryBytes >= 64*mib
	})
	st, _ := h.e.Model("a")
	if st.EstimateBytes != st.LearnedBytes {
		t.Fatalf("need %d should be the learned %d", st.EstimateBytes, st.LearnedBytes)
	}
	testbed.WaitFor(t, 10*time.Second, "footprints saved", func() bool {
		_, err := os.Stat(filepath.Join(h.dir, "state", "footprints.json"))
		return err == nil
	})
	fp, err := loadFootprints(filepath.Join(h.dir, "state"))
	if err != nil || len(fp.m) != 1 {
		t.Fatalf("persisted %v, %v", fp, err)
	}
}

// Many clients, three models, room for one: every request is served, lease counts return to zero,
// and (checked in cleanup over the event stream) no model ever stops while leased.
func TestStressRoomForOne(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MemoryLimit = 150 * mib },
		fakeModel{id: "a", estMiB: 100, knobs: big}, fakeModel{id: "b", estMiB: 100, knobs: big}, fakeModel{id: "c", estMiB: 100, knobs: big})
	ids := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	served := 0
	for g := 0; g < 12; g++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 7))
			for i := 0; i < 6; i++ {
				ctx, cancel := context.WithCancel(context.Background())
				id := ids[r.IntN(3)]
				if r.IntN(10) == 0 {
					cancel() // an abandoned request
				}
				l, err := h.e.Acquire(ctx, id)
				if err != nil {
					cancel()
					if !errors.Is(err, context.Canceled) {
						t.Errorf("%s: %v", id, err)
					}
					continue
				}
				if code := get(t, l, "/health"); code != 200 {
					t.Errorf("%s answered %d while leased", id, code)
				}
				l.Release()
				cancel()
				mu.Lock()
				served++
				mu.Unlock()
			}
		}(uint64(g))
	}
	wg.Wait()
	for _, st := range h.e.Models() {
		if st.Active != 0 || st.Queued != 0 {
			t.Fatalf("%s: active %d queued %d at the end", st.ID, st.Active, st.Queued)
		}
	}
	if served == 0 {
		t.Fatal("nothing served")
	}
	t.Logf("served %d", served)
}

// A model that does not fit in the memory available right now, but would fit the machine, waits for
// memory instead of being refused; one larger than the machine is refused at once.
func TestTransientShortageWaitsTooLargeRefused(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MemoryLimit = 0; o.Reserve = 0 },
		fakeModel{id: "a", estMiB: 100}, fakeModel{id: "huge", estMiB: 100 << 10})
	h.probe.avail.Store(50 << 20) // other programs hold almost everything for now
	h.e.sample(context.Background())
	_, err := h.e.Acquire(context.Background(), "huge")
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Budget != 64<<30 {
		t.Fatalf("huge: %v", err)
	}
	ac := h.acquireAsync(context.Background(), "a")
	testbedWaitQueued(h, "a", 1)
	if st, _ := h.e.Model("a"); st.State != StateUnloaded {
		t.Fatalf("a is %s while memory is short", st.State)
	}
	h.probe.avail.Store(32 << 30) // the other programs let go
	r := <-ac
	if r.err != nil {
		t.Fatalf("a after memory came back: %v", r.err)
	}
	r.lease.Release()
}

// Ollama's keep_alive: 0 unloads the model as soon as its last lease is released, a negative one
// keeps it past the configured idle timer, and nil goes back to that timer.
func TestKeepAlive(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.Settings = func(string) Settings { return Settings{IdleUnload: time.Hour} }
	}, fakeModel{id: "a", estMiB: 10})
	if err := h.e.Load(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	never := time.Duration(-1)
	if err := h.e.KeepAlive("a", &never); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.e.Model("a"); !st.UnloadAt.IsZero() {
		t.Fatalf("keep_alive -1: unload due at %v", st.UnloadAt)
	}
	if err := h.e.KeepAlive("a", nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.e.Model("a"); st.UnloadAt.IsZero() {
		t.Fatal("back to the configured timer: no unload due")
	}
	l, err := h.e.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	zero := time.Duration(0)
	if err := h.e.KeepAlive("a", &zero); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.e.Model("a"); st.State != StateLoaded {
		t.Fatalf("keep_alive 0 stopped a leased model: %s", st.State)
	}
	l.Release()
	h.waitState("a", 10*time.Second, StateUnloaded)
	if err := h.e.Load(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.e.Model("a"); st.UnloadAt.IsZero() || time.Until(st.UnloadAt) < 30*time.Minute {
		t.Fatalf("a new child keeps the configured timer, due %v", st.UnloadAt)
	}
	if err := h.e.KeepAlive("nope", nil); err == nil {
		t.Error("an unknown model was accepted")
	}
}
