package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/llamatray/llamatray/router/activity"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/metricstest"
)

// scrapeMetrics gets GET /metrics (no model) with headers and parses it with Prometheus's parser.
func scrapeMetrics(t *testing.T, base string, header ...string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %d %s: %.300s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return metricstest.Parse(t, resp.Body)
}

func TestMetricsCountTraffic(t *testing.T) {
	fake, _ := startFakeLlama(t, "", "FAKE_LLAMA_TOKENS=4")
	srv, fe, _ := testRouter(t, fake, nil)
	fe.mu.Lock()
	fe.models["m1"].Queued = 3
	fe.budget.Devices = []engine.DeviceBudget{{Name: "CUDA0", Total: 24 << 30, Limit: 20 << 30, Used: 2 << 30, Measured: 1 << 30}}
	fe.mu.Unlock()

	// N chats, each answer's usage summed as the client read it; then failures of known statuses.
	const n = 5
	var in, out int64
	for i := 0; i < n; i++ {
		resp, b := post(t, srv.URL+"/v1/chat/completions", `{"model":"fast","messages":[{"role":"user","content":"hello there"}]}`)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("chat %d: %d %s", i, resp.StatusCode, b)
		}
		var u *activity.Usage
		sc := activity.NewScanner(io.NopCloser(bytes.NewReader(b)), func(got *activity.Usage) { u = got })
		_, _ = io.Copy(io.Discard, sc)
		_ = sc.Close()
		if u == nil || !u.HasTimings || u.In() == 0 || u.Out() == 0 {
			t.Fatalf("chat %d reported no usage: %s", i, b)
		}
		in, out = in+u.In(), out+u.Out()
	}
	resp, err := http.Get(srv.URL + "/upstream/m1/no-such-page")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the fake answered %d, want 404", resp.StatusCode)
	}
	fe.mu.Lock()
	fe.acquire = func(ctx context.Context, id string) (*engine.Lease, error) {
		return nil, &engine.QueueTimeoutError{Model: id, Waited: time.Second, RetryAfter: time.Second}
	}
	fe.mu.Unlock()
	for i := 0; i < 2; i++ {
		resp, b := post(t, srv.URL+"/v1/chat/completions", `{"model":"m1","messages":[]}`)
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("queue timeout: %d %s", resp.StatusCode, b)
		}
	}
	post(t, srv.URL+"/v1/chat/completions", `{"model":"nope","messages":[]}`) // unknown: no series

	// A request is counted once its handler returned, which may be after its client read the answer.
	var fams map[string]*dto.MetricFamily
	testbed.WaitFor(t, 10*time.Second, "every request to be counted", func() bool {
		fams = scrapeMetrics(t, srv.URL)
		v, _ := metricstest.Value(fams, "llamatray_request_duration_seconds", "model", "m1")
		return v == n+3
	})
	check := func(want float64, name string, labels ...string) {
		t.Helper()
		if got, ok := metricstest.Value(fams, name, labels...); !ok || got != want {
			t.Errorf("%s%v = %v (present %v), want %v", name, labels, got, ok, want)
		}
	}
	check(n, "llamatray_requests_total", "model", "m1", "code", "200")
	check(1, "llamatray_requests_total", "model", "m1", "code", "404")
	check(2, "llamatray_requests_total", "model", "m1", "code", "503")
	if fam := fams["llamatray_requests_total"]; fam == nil || len(fam.Metric) != 3 {
		t.Errorf("request series %v, want m1's three codes only", fam)
	}
	check(float64(in), "llamatray_tokens_in_total", "model", "m1")
	check(float64(out), "llamatray_tokens_out_total", "model", "m1")
	check(n+1, "llamatray_queue_wait_seconds", "model", "m1") // the leased ones
	check(n, "llamatray_time_to_first_token_seconds", "model", "m1")
	check(1, "llamatray_model_state", "model", "m1", "state", "loaded")
	check(0, "llamatray_model_state", "model", "m1", "state", "loading")
	check(3, "llamatray_model_queued_requests", "model", "m1")
	check(0, "llamatray_model_active_requests", "model", "m1")
	b := fe.Budget()
	check(float64(b.Limit), "llamatray_budget_limit_bytes")
	check(float64(b.Free), "llamatray_budget_free_bytes")
	check(float64(b.Used), "llamatray_budget_used_bytes")
	check(20<<30, "llamatray_device_budget_limit_bytes", "device", "CUDA0")
	check(18<<30, "llamatray_device_budget_free_bytes", "device", "CUDA0")

	// A state change the scrape reads from the engine, and a load from its events.
	fe.mu.Lock()
	fe.models["m1"].State = engine.StateSleeping
	fe.acquire = nil
	fe.mu.Unlock()
	t0 := time.Unix(1700000000, 0)
	fe.publish(engine.Event{Kind: "state", Model: "m1", State: engine.StateLoading, Time: t0})
	fe.publish(engine.Event{Kind: "state", Model: "m1", State: engine.StateLoaded, Time: t0.Add(2 * time.Second)})
	fe.publish(engine.Event{Kind: "state", Model: "m1", State: engine.StateSleeping, Time: t0.Add(9 * time.Second)})
	testbed.WaitFor(t, 10*time.Second, "the events to be counted", func() bool {
		fams = scrapeMetrics(t, srv.URL)
		v, _ := metricstest.Value(fams, "llamatray_sleeps_total", "model", "m1", "reason", "idle")
		return v == 1
	})
	check(1, "llamatray_model_state", "model", "m1", "state", "sleeping")
	check(0, "llamatray_model_state", "model", "m1", "state", "loaded")
	check(1, "llamatray_loads_total", "model", "m1", "result", "loaded")
	check(1, "llamatray_load_duration_seconds", "model", "m1")
}

func TestMetricsWithModelProxies(t *testing.T) {
	up, got := recordingUpstream(t)
	srv, fe, _ := testRouter(t, up.URL, func(o *Options) { o.DefaultModel = "fast" })
	// No model, even with a default model: Llamatray's own, the child untouched.
	fams := scrapeMetrics(t, srv.URL)
	if _, ok := metricstest.Value(fams, "llamatray_model_state", "model", "m1", "state", "loaded"); !ok {
		t.Fatal("no llamatray_model_state for m1")
	}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/metrics?model=m1", ""},
		{http.MethodPost, "/metrics", `{"model":"fast"}`},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"upstream":true`) {
			t.Fatalf("%s %s: %d %s", c.method, c.path, resp.StatusCode, b)
		}
		if s := <-got; s.Path != "/metrics" || s.Method != c.method || string(s.Body) != c.body {
			t.Fatalf("%s %s reached the child as %s %s %q", c.method, c.path, s.Method, s.Path, s.Body)
		}
	}
	waitReleased(t, fe, 2)
	select {
	case s := <-got:
		t.Fatalf("the scrape reached the child: %s %s", s.Method, s.Path)
	default:
	}
}

func TestMetricsNeedsKey(t *testing.T) {
	up, _ := recordingUpstream(t)
	srv, _, _ := testRouter(t, up.URL, func(o *Options) { o.APIKeys = []string{"sk-test"} })
	for _, path := range []string{"/metrics", "/metrics?model=m1"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s without a key: %d", path, resp.StatusCode)
		}
	}
	scrapeMetrics(t, srv.URL, "Authorization", "Bearer sk-test")
	scrapeMetrics(t, srv.URL, "X-Api-Key", "sk-test")
}

func TestMetricsWatchEndsWithClose(t *testing.T) {
	fe := newFakeEngine()
	server := New(Options{Engine: fe})
	<-fe.subscribed
	server.Close()
	fe.mu.Lock()
	n := len(fe.subs)
	fe.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d subscriptions left after Close", n)
	}
	server.Close() // twice is fine
}
