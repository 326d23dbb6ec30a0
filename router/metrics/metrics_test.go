package metrics

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/metricstest"
)

// fakeSource is a Source with fixed models and budget and a subscription the test feeds.
type fakeSource struct {
	mu     sync.Mutex // guards models and budget
	models []engine.ModelStatus
	budget engine.Budget
	ch     chan engine.Event
}

func (f *fakeSource) Models() []engine.ModelStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]engine.ModelStatus(nil), f.models...)
}

func (f *fakeSource) Budget() engine.Budget {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.budget
}

func (f *fakeSource) SubscribeTo(...engine.EventKind) (<-chan engine.Event, func()) {
	return f.ch, func() {}
}

// scrape gets m's exposition and parses it with Prometheus's own parser.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	return metricstest.Parse(t, rec.Body)
}

func want(t *testing.T, fams map[string]*dto.MetricFamily, v float64, name string, labels ...string) {
	t.Helper()
	got, ok := metricstest.Value(fams, name, labels...)
	if !ok || got != v {
		t.Errorf("%s%v = %v (present %v), want %v", name, labels, got, ok, v)
	}
}

func TestEventsCountLoadsUnloadsSleeps(t *testing.T) {
	m := New(nil)
	f := newFeed(m)
	t0 := time.Unix(1700000000, 0)
	state := func(id string, s engine.State, at time.Duration, c engine.Cause) {
		f.event(engine.Event{Kind: engine.EventState, Model: id, State: s, Time: t0.Add(at), Cause: c})
	}
	state("a", engine.StateLoading, 0, "")
	state("a", engine.StateLoading, time.Second, engine.CauseProgress) // progress: no new load
	state("a", engine.StateLoaded, 3*time.Second, "")
	state("a", engine.StateSleeping, 10*time.Second, "")
	state("a", engine.StateLoaded, 11*time.Second, engine.CauseWoke)
	state("a", engine.StateLoaded, 12*time.Second, engine.CauseAsked) // the drain: no move
	state("a", engine.StateStopping, 13*time.Second, engine.CauseAsked)
	state("a", engine.StateUnloaded, 14*time.Second, "")
	state("a", engine.StateLoading, 20*time.Second, "")
	state("a", engine.StateFailed, 21*time.Second, engine.CauseFailed)
	f.event(engine.Event{Kind: "lease", Model: "a", State: engine.StateLoaded, Active: 1})
	state("b", engine.StateLoaded, 0, "") // first seen loaded: no load counted
	state("b", engine.StateStopping, time.Second, engine.CauseEvicted)
	state("b", engine.StateStopping, 2*time.Second, engine.CauseForced) // already stopping
	state("c", engine.StateLoaded, 0, "")
	state("c", engine.StateStopping, time.Second, engine.CausePressure)
	state("d", engine.StateLoaded, 0, "")
	state("d", engine.StateStopping, time.Second, engine.CauseIdle)
	state("e", engine.StateLoaded, 0, "")
	state("e", engine.StateFailed, time.Second, engine.CauseFailed)

	fams := scrape(t, m)
	want(t, fams, 1, "llamatray_loads_total", "model", "a", "result", "loaded")
	want(t, fams, 1, "llamatray_loads_total", "model", "a", "result", "failed")
	if _, ok := metricstest.Value(fams, "llamatray_loads_total", "model", "b", "result", "loaded"); ok {
		t.Error("a model first seen loaded counted a load")
	}
	want(t, fams, 1, "llamatray_load_duration_seconds", "model", "a")
	if h := fams["llamatray_load_duration_seconds"].Metric[0].Histogram; h.GetSampleSum() != 3 {
		t.Errorf("load time sum %v, want 3 s", h.GetSampleSum())
	}
	want(t, fams, 1, "llamatray_sleeps_total", "model", "a", "reason", "idle")
	want(t, fams, 1, "llamatray_unloads_total", "model", "a", "reason", "asked")
	want(t, fams, 1, "llamatray_unloads_total", "model", "b", "reason", "evicted")
	want(t, fams, 1, "llamatray_unloads_total", "model", "c", "reason", "memory_pressure")
	want(t, fams, 1, "llamatray_unloads_total", "model", "d", "reason", "idle")
	want(t, fams, 1, "llamatray_unloads_total", "model", "e", "reason", "crashed")
	if n := len(fams["llamatray_unloads_total"].Metric); n != 5 {
		t.Errorf("%d unload series, want 5", n)
	}
}

func TestStopReasons(t *testing.T) {
	for c, want := range map[engine.Cause]string{
		engine.CauseIdle: "idle", engine.CausePressure: "memory_pressure", engine.CauseEvicted: "evicted",
		engine.CauseFairWait: "evicted", engine.CauseAsked: "asked", engine.CauseForced: "asked",
		engine.CauseOverLimit: "over_limit", engine.CauseShutdown: "shutdown", "": "other",
	} {
		if got := stopReason(c); got != want {
			t.Errorf("stopReason(%q) = %q, want %q", c, got, want)
		}
	}
}

func TestGaugesReadAtScrape(t *testing.T) {
	src := &fakeSource{
		models: []engine.ModelStatus{
			{ID: "a", State: engine.StateLoaded, Active: 2, Queued: 3, MemoryBytes: 5 << 20, HeldGPU: map[string]int64{"CUDA0": 7 << 20}},
			{ID: "b", State: engine.StateUnloaded},
		},
		budget: engine.Budget{Limit: 8 << 30, Used: 1 << 30, Free: 7 << 30, Measured: 1 << 29, Loaded: 1, MaxLoaded: 2,
			Devices: []engine.DeviceBudget{{Name: "CUDA0", Total: 24 << 30, Limit: 20 << 30, Used: 21 << 30, Measured: 1 << 30}}},
	}
	m := New(src)
	fams := scrape(t, m)
	want(t, fams, 1, "llamatray_model_state", "model", "a", "state", "loaded")
	want(t, fams, 0, "llamatray_model_state", "model", "a", "state", "unloaded")
	want(t, fams, 1, "llamatray_model_state", "model", "b", "state", "unloaded")
	want(t, fams, 2, "llamatray_model_active_requests", "model", "a")
	want(t, fams, 3, "llamatray_model_queued_requests", "model", "a")
	want(t, fams, 5<<20, "llamatray_model_memory_bytes", "model", "a")
	want(t, fams, 7<<20, "llamatray_model_device_memory_bytes", "model", "a", "device", "CUDA0")
	want(t, fams, 8<<30, "llamatray_budget_limit_bytes")
	want(t, fams, 7<<30, "llamatray_budget_free_bytes")
	want(t, fams, 1<<30, "llamatray_budget_used_bytes")
	want(t, fams, 2, "llamatray_max_loaded_models")
	want(t, fams, 24<<30, "llamatray_device_total_bytes", "device", "CUDA0")
	want(t, fams, 0, "llamatray_device_budget_free_bytes", "device", "CUDA0") // over its limit: 0, not negative

	src.mu.Lock()
	src.models[1].State, src.models[1].Queued = engine.StateLoading, 1
	src.mu.Unlock()
	fams = scrape(t, m)
	want(t, fams, 1, "llamatray_model_state", "model", "b", "state", "loading")
	want(t, fams, 1, "llamatray_model_queued_requests", "model", "b")
}

func TestRequest(t *testing.T) {
	m := New(nil)
	m.Request(Request{Model: "a", Code: 200, Duration: time.Second, Leased: true, Wait: time.Millisecond, TokensIn: 5, TokensOut: 7, HasTTFT: true, TTFT: 2 * time.Millisecond})
	m.Request(Request{Model: "a", Code: 200, Duration: time.Second, Leased: true, TokensIn: 1})
	m.Request(Request{Model: "a", Code: 503, Duration: time.Second})
	m.Request(Request{Code: 200}) // no model: not counted
	var nilM *Metrics
	nilM.Request(Request{Model: "a", Code: 200})
	fams := scrape(t, m)
	want(t, fams, 2, "llamatray_requests_total", "model", "a", "code", "200")
	want(t, fams, 1, "llamatray_requests_total", "model", "a", "code", "503")
	want(t, fams, 6, "llamatray_tokens_in_total", "model", "a")
	want(t, fams, 7, "llamatray_tokens_out_total", "model", "a")
	want(t, fams, 3, "llamatray_request_duration_seconds", "model", "a")
	want(t, fams, 2, "llamatray_queue_wait_seconds", "model", "a")
	want(t, fams, 1, "llamatray_time_to_first_token_seconds", "model", "a")
	if n := len(fams["llamatray_requests_total"].Metric); n != 2 {
		t.Errorf("%d request series, want 2", n)
	}
}

func TestWatchStops(t *testing.T) {
	src := &fakeSource{ch: make(chan engine.Event, 4)}
	m := New(src)
	stop := m.Watch(src)
	src.ch <- engine.Event{Kind: "state", Model: "a", State: engine.StateLoading, Time: time.Unix(1, 0)}
	src.ch <- engine.Event{Kind: "state", Model: "a", State: engine.StateLoaded, Time: time.Unix(2, 0)}
	testbed.WaitFor(t, 10*time.Second, "the watcher to count the load", func() bool {
		v, _ := metricstest.Value(scrape(t, m), "llamatray_loads_total", "model", "a", "result", "loaded")
		return v == 1
	})
	stop()
	stop() // twice is fine

	closed := &fakeSource{ch: make(chan engine.Event)}
	close(closed.ch)
	New(closed).Watch(closed)() // the engine closed the subscription: the goroutine is gone already
}
