package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
)

func get(t *testing.T, l *Lease, path string) int {
	t.Helper()
	resp, err := leaseClient(l).Get(l.URL.String() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// leaseClient reaches the child of l, on its unix socket when it has one.
func leaseClient(l *Lease) *http.Client {
	if l.Socket == "" {
		return http.DefaultClient
	}
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", l.Socket)
		},
	}}
}

func TestLoadServeUnload(t *testing.T) {
	h := newHarness(t, nil, fakeModel{id: "a", estMiB: 100, alias: "alpha"})
	l, err := h.e.Acquire(context.Background(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if code := get(t, l, "/health"); code != 200 {
		t.Fatalf("health %d", code)
	}
	st, _ := h.e.Model("a")
	if st.State != StateLoaded || st.Active != 1 || st.PID == 0 || st.Port == 0 && st.Socket == "" {
		t.Fatalf("status %+v", st)
	}
	l.Release()
	l.Release() // idempotent
	if st, _ := h.e.Model("a"); st.Active != 0 {
		t.Fatalf("active %d after release", st.Active)
	}
	if err := h.e.Unload(context.Background(), "a", false); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.e.Model("a"); st.State != StateUnloaded || st.ExitCode == nil {
		t.Fatalf("after unload %+v", st)
	}
	if n := h.countRecord("start", "a"); n != 1 {
		t.Fatalf("%d starts, want 1", n)
	}
}

func TestUnknownModelSuggests(t *testing.T) {
	h := newHarness(t, nil, fakeModel{id: "qwen-7b", estMiB: 10})
	_, err := h.e.Acquire(context.Background(), "qwen")
	var ue *UnknownModelError
	if !errors.As(err, &ue) || len(ue.Suggestions) != 1 || ue.Suggestions[0] != "qwen-7b" {
		t.Fatalf("err %v", err)
	}
	if _, err := h.e.Acquire(context.Background(), "/etc/passwd"); !errors.As(err, &ue) {
		t.Fatalf("a path must not resolve: %v", err)
	}
}

func TestSharedLoad(t *testing.T) {
	h := newHarness(t, nil, fakeModel{id: "a", estMiB: 10, knobs: map[string]any{"load_time": "300ms"}})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := h.e.Acquire(context.Background(), "a")
			if err != nil {
				errs <- err
				return
			}
			l.Release()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := h.countRecord("start", "a"); n != 1 {
		t.Fatalf("%d children started for 20 concurrent requests, want 1", n)
	}
}

// A model with a lease is never stopped: B waits until A's lease is released.
func TestLeaseBlocksEviction(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MemoryLimit = 150 * mib },
		fakeModel{id: "a", estMiB: 100, knobs: big}, fakeModel{id: "b", estMiB: 100, knobs: big})
	la, err := h.e.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	bc := h.acquireAsync(context.Background(), "b")
	testbedWaitQueued(h, "b", 1)
	// While A is leased, it must stay loaded and receive no signal.
	if st, _ := h.e.Model("a"); st.State != StateLoaded {
		t.Fatalf("a is %s while leased", st.State)
	}
	if code := get(t, la, "/health"); code != 200 {
		t.Fatalf("a stopped serving while leased: %d", code)
	}
	if n := h.countRecord("signal", "a"); n != 0 {
		t.Fatalf("a received %d signals while leased", n)
	}
	la.Release()
	r := <-bc
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.lease.Release()
	if st, _ := h.e.Model("a"); st.State != StateUnloaded {
		t.Fatalf("a is %s, want unloaded after eviction", st.State)
	}
}

func testbedWaitQueued(h *harness, id string, n int) {
	h.t.Helper()
	testbed.WaitFor(h.t, 10*time.Second, fmt.Sprintf("%d requests queued for %s", n, id), func() bool {
		st, _ := h.e.Model(id)
		return st.Queued >= n
	})
}

func TestQueueDeadline(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MemoryLimit = 150 * mib },
		fakeModel{id: "a", estMiB: 100, knobs: big}, fakeModel{id: "b", estMiB: 100, knobs: big})
	la, err := h.e.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer la.Release()
	if err := h.e.SetPinned("a", true); err != nil { // nothing frees its memory for b
		t.Fatal(err)
	}
	h.e.SetLimits(Limits{Binary: h.e.o.Binary, MemoryLimit: 150 * mib, QueueTimeout: 300 * time.Millisecond, StopTimeout: 2 * time.Second})
	_, err = h.e.Acquire(context.Background(), "b")
	var qe *QueueTimeoutError
	if !errors.As(err, &qe) || qe.RetryAfter <= 0 || qe.Waited < 300*time.Millisecond {
		t.Fatalf("err %v", err)
	}
	if st, _ := h.e.Model("b"); st.Queued != 0 {
		t.Fatalf("%d still queued", st.Queued)
	}
}

func TestDisconnectLeavesQueue(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MemoryLimit = 150 * mib },
		fakeModel{id: "a", estMiB: 100, knobs: big}, fakeModel{id: "b", estMiB: 100, knobs: big})
	la, err := h.e.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer la.Release()
	ctx, cancel := context.WithCancel(context.Background())
	bc := h.acquireAsync(ctx, "b")
	testbedWaitQueued(h, "b", 1)
	cancel()
	r := <-bc
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("err %v", r.err)
	}
	if st, _ := h.e.Model("b"); st.Queued != 0 || st.State != StateUnloaded {
		t.Fatalf("b %+v", st)
	}
}

// Queued loads are served first come, first served.
func TestFIFO(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MemoryLimit = 150 * mib },
		fakeModel{id: "a", estMiB: 100, knobs: big}, fakeModel{id: "b", estMiB: 100, knobs: big}, fakeModel{id: "c", estMiB: 100, knobs: big})
	la, err := h.e.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 2)
	var wg sync.WaitGroup
	for _, id := range []string{"c", "b"} {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			l, err := h.e.Acquire(context.Background(), id)
			if err != nil {
				t.Error(err)
				return
			}
			order <- id
			l.Release()
		}(id)
		testbedWaitQueued(h, id, 1)
	}
	la.Release()
	wg.Wait()
	close(order)
	var got []string
	for id := range order {
		got = append(got, id)
	}
	if strings.Join(got, ",") != "c,b" {
		t.Fatalf("served %v, want c then b", got)
	}
}

// llama.cpp #28698: with room for one, a cold model loaded for its waiting request hands it the lease
// before a queued load for another model can evict it.
func TestFreshLoadIsNotEvictedBeforeItsRequest(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxLoaded = 1 },
		fakeModel{id: "a", estMiB: 10, knobs: map[string]any{"load_time": "300ms"}}, fakeModel{id: "b", estMiB: 10})
	ac := h.acquireAsync(context.Background(), "a")
	h.waitState("a", 10*time.Second, StateLoading)
	bc := h.acquireAsync(context.Background(), "b")
	testbedWaitQueued(h, "b", 1)
	r := <-ac
	if r.err != nil {
		t.Fatalf("a: %v", r.err)
	}
	if code := get(t, r.lease, "/health"); code != 200 {
		t.Fatalf("a not serving: %d", code)
	}
	select {
	case rb := <-bc:
		t.Fatalf("b served while a is leased: %+v", rb)
	default:
	}
	r.lease.Release()
	rb := <-bc
	if rb.err != nil {
		t.Fatal(rb.err)
	}
	rb.lease.Release()
}

// llama.cpp #28443 and #28774: simultaneous cold starts of distinct models with a cap below their
// number all finish; the idle model is evicted once.
func TestConcurrentColdStarts(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxLoaded = 1 },
		fakeModel{id: "a", estMiB: 10}, fakeModel{id: "b", estMiB: 10}, fakeModel{id: "c", estMiB: 10})
	if err := h.e.Load(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, id := range []string{"b", "c", "b", "c"} {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			l, err := h.e.Acquire(context.Background(), id)
			if err != nil {
				t.Errorf("%s: %v", id, err)
				return
			}
			l.Release()
		}(id)
	}
	wg.Wait()
	stops := 0
	for _, ev := range h.eventsFor("a") {
		if ev.Kind == "state" && ev.State == StateStopping {
			stops++
		}
	}
	if stops != 1 {
		t.Fatalf("a stopped %d times, want 1", stops)
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
