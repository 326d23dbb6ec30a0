package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/view"
)

// recorded are llama.cpp's own router answers, recorded from llama-server --models-dir (see the
// folder's README).
const recorded = "../testbed/testdata/llamacpp-router"

func readRecorded(t *testing.T, name string) []byte {
	t.Helper()
	return readRecordedIn(t, recorded, name)
}

// readRecordedIn reads a recorded answer of another server (llama.cpp's router, Ollama) from dir.
func readRecordedIn(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkShape fails for every field of want that got lacks or has with another type (see
// testbed.ShapeDiffs): want is llama.cpp's router, got Llamatray.
func checkShape(t *testing.T, what string, want, got []byte, skip map[string]bool) {
	t.Helper()
	diffs, err := testbed.ShapeDiffs(want, got, skip)
	if err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	for _, d := range diffs {
		t.Errorf("%s: %s", what, d)
	}
}

func getBody(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestRouterPropsParity(t *testing.T) {
	srv, _, _ := testRouter(t, "http://127.0.0.1:1", nil)
	code, got := getBody(t, srv.URL+"/props")
	if code != 200 {
		t.Fatalf("%d %s", code, got)
	}
	checkShape(t, "GET /props", readRecorded(t, "props.json"), got, nil)
	var p struct {
		Role           string `json:"role"`
		ModelsAutoload bool   `json:"models_autoload"`
	}
	if json.Unmarshal(got, &p); p.Role != "router" || !p.ModelsAutoload {
		t.Fatalf("props %s", got)
	}
}

// modelsSkip are llama.cpp's /models fields Llamatray has no counterpart for: presets are
// llama.cpp's own configuration format, and removing models is not this endpoint's business.
var modelsSkip = map[string]bool{"data[].status.preset": true, "data[].source": true, "data[].can_remove": true}

func TestRouterModelsParityAndReload(t *testing.T) {
	var reloads atomic.Int32
	srv, _, _ := testRouter(t, "http://127.0.0.1:1", func(o *Options) {
		o.Reload = func(ctx context.Context) error { reloads.Add(1); return nil }
	})
	code, got := getBody(t, srv.URL+"/models")
	if code != 200 || reloads.Load() != 0 {
		t.Fatalf("%d, %d reloads: %s", code, reloads.Load(), got)
	}
	checkShape(t, "GET /models", readRecorded(t, "models.json"), got, modelsSkip)
	for _, q := range []string{"reload=1", "reload=true"} {
		code, got = getBody(t, srv.URL+"/models?"+q)
		if code != 200 {
			t.Fatalf("%s: %d %s", q, code, got)
		}
		checkShape(t, "GET /models?"+q, readRecorded(t, "models-reload.json"), got, modelsSkip)
	}
	if n := reloads.Load(); n != 2 {
		t.Fatalf("%d reloads, want 2", n)
	}
}

func TestRouterReloadFailure(t *testing.T) {
	srv, _, _ := testRouter(t, "http://127.0.0.1:1", func(o *Options) {
		o.Reload = func(ctx context.Context) error { return context.DeadlineExceeded }
	})
	if code, got := getBody(t, srv.URL+"/v1/models?reload=1"); code < 500 || !strings.Contains(string(got), "reload") {
		t.Fatalf("%d %s", code, got)
	}
}

// ?autoload=false on a model that is not running is llama.cpp's 400 "model is not loaded", and no
// load starts; a loaded or sleeping model is served; autoload=true changes nothing.
func TestAutoloadParam(t *testing.T) {
	up, _ := recordingUpstream(t)
	srv, fe, _ := testRouter(t, up.URL, nil)
	var rec struct {
		Status int `json:"status"`
		Body   struct {
			Error struct{ Message, Type string } `json:"error"`
		} `json:"body"`
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(readRecorded(t, "errors.json"), &all); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(all["autoload_false_not_loaded"], &rec); err != nil {
		t.Fatal(err)
	}
	body := `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct {
		state  engine.State
		query  string
		status int
	}{
		{engine.StateUnloaded, "?autoload=false", rec.Status},
		{engine.StateFailed, "?autoload=0", rec.Status},
		{engine.StateLoading, "?autoload=false", rec.Status},
		{engine.StateLoaded, "?autoload=false", 200},
		{engine.StateSleeping, "?autoload=false", 200},
		{engine.StateUnloaded, "?autoload=true", 200},
		{engine.StateUnloaded, "", 200},
	} {
		fe.mu.Lock()
		fe.models["m1"].State = c.state
		fe.mu.Unlock()
		resp, err := http.Post(srv.URL+"/v1/chat/completions"+c.query, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Fatalf("%s %s: %d %s", c.state, c.query, resp.StatusCode, b)
		}
		if c.status != 200 {
			typ, _, msg := decodeError(t, &http.Response{StatusCode: resp.StatusCode, Body: io.NopCloser(strings.NewReader(string(b)))})
			if typ != rec.Body.Error.Type || msg != rec.Body.Error.Message {
				t.Fatalf("%s: error %q %q; llama.cpp's router: %q %q", c.state, typ, msg, rec.Body.Error.Type, rec.Body.Error.Message)
			}
			if fe.active("m1") != 0 {
				t.Fatal("a lease was taken")
			}
		}
	}
	waitReleased(t, fe, 4)
}

// The engine's events, through GET /models/sse, have the shapes of llama.cpp's router events of
// the same kind, in its order: model_status loading, status_change loading with progress, loaded
// with the model's info, unloaded with an exit code (failed too), models_reload for the list.
func TestModelsSSEParity(t *testing.T) {
	srv, fe, _ := testRouter(t, "http://127.0.0.1:1", nil)
	recordedEvents := map[string][]byte{}
	for _, name := range []string{"sse.txt", "sse-failed.txt"} {
		for _, line := range strings.Split(string(readRecorded(t, name)), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				recordedEvents[sseKey(t, []byte(data))] = []byte(data)
			}
		}
	}
	resp, err := http.Get(srv.URL + "/models/sse")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	<-fe.subscribed
	set := func(st engine.State, progress float64, exit *int) {
		fe.mu.Lock()
		m := fe.models["m1"]
		m.State, m.Progress, m.ExitCode = st, progress, exit
		fe.mu.Unlock()
	}
	one, zero := 1, 0
	steps := []struct {
		ev       engine.Event
		progress float64
		exit     *int
		want     []string // keys of the events expected
	}{
		{engine.Event{Kind: "state", Model: "m1", State: engine.StateLoading}, 0, nil, []string{"model_status/loading", "status_change/loading"}},
		{engine.Event{Kind: "lease", Model: "m1", State: engine.StateLoading}, 0, nil, nil},
		{engine.Event{Kind: "state", Model: "m1", State: engine.StateLoading, Message: "loading 50%"}, 0.5, nil, []string{"status_change/loading"}},
		{engine.Event{Kind: "state", Model: "m1", State: engine.StateLoaded}, 1, nil, []string{"status_change/loaded"}},
		{engine.Event{Kind: "state", Model: "m1", State: engine.StateLoaded, Message: "pinned=true"}, 1, nil, nil},
		{engine.Event{Kind: "state", Model: "m1", State: engine.StateStopping}, 1, nil, nil},
		{engine.Event{Kind: "state", Model: "m1", State: engine.StateUnloaded}, 0, &zero, []string{"status_change/unloaded"}},
		{engine.Event{Kind: "catalog", Message: "1 models"}, 0, &zero, []string{"models_reload/"}},
		{engine.Event{Kind: "state", Model: "m1", State: engine.StateLoading}, 0, nil, []string{"model_status/loading", "status_change/loading"}},
		{engine.Event{Kind: "state", Model: "m1", State: engine.StateFailed}, 0, &one, []string{"status_change/unloaded"}},
	}
	br := bufio.NewReader(resp.Body)
	for i, s := range steps {
		set(s.ev.State, s.progress, s.exit)
		fe.publish(s.ev)
		if s.want == nil {
			continue
		}
		for _, key := range s.want {
			ev := testbed.ReadSSEEvent(t, br)
			data, ok := strings.CutPrefix(strings.TrimSpace(ev), "data: ")
			if !ok {
				t.Fatalf("step %d: event %q", i, ev)
			}
			if got := sseKey(t, []byte(data)); got != key {
				t.Fatalf("step %d: event %s, want %s: %s", i, got, key, data)
			}
			want, ok := recordedEvents[key]
			if !ok {
				t.Fatalf("no recorded llama.cpp event %s", key)
			}
			skip := map[string]bool{}
			if key == "status_change/loaded" {
				// llama.cpp's info is the child's /v1/models entry; Llamatray's is its own list entry.
				skip = map[string]bool{"data.info.meta": true}
			}
			checkShape(t, fmt.Sprintf("step %d %s", i, key), want, []byte(data), skip)
			if key == "status_change/loading" && i == 2 && !strings.Contains(data, `"value":0.5`) {
				t.Fatalf("progress not carried: %s", data)
			}
			if i == 9 && !strings.Contains(data, `"exit_code":1`) {
				t.Fatalf("failed load: %s", data)
			}
		}
	}
}

// sseKey is "event/status" of one /models/sse data line.
func sseKey(t *testing.T, data []byte) string {
	t.Helper()
	var ev struct {
		Model string `json:"model"`
		Event string `json:"event"`
		Data  struct {
			Status string `json:"status"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &ev); err != nil || ev.Model == "" || ev.Event == "" {
		t.Fatalf("event %s: %v", data, err)
	}
	return ev.Event + "/" + ev.Data.Status
}

// Hub downloads appear in /models/sse as "downloading" with the share of bytes done, in the shape
// of llama.cpp's loading progress; a failed one as a failed "unloaded"; a finished one says nothing
// (the catalog's models_reload follows).
func TestPullSSE(t *testing.T) {
	loading := []byte(nil)
	for _, line := range strings.Split(string(readRecorded(t, "sse.txt")), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && sseKey(t, []byte(data)) == "status_change/loading" {
			loading = []byte(data)
			break
		}
	}
	ev := func(state string, done, total int64, errMsg string) hub.Event {
		return hub.Event{PullStatus: hub.PullStatus{Model: "org/repo:Q4_K_M", State: state, Error: errMsg,
			Progress: hub.Progress{Done: done, Total: total}}}
	}
	got := pullSSE(ev(hub.StateDownloading, 50, 200, ""))
	b, _ := json.Marshal(got[0])
	if len(got) != 1 || !strings.Contains(string(b), `"status":"downloading"`) || !strings.Contains(string(b), `"value":0.25`) {
		t.Fatalf("%s", b)
	}
	checkShape(t, "downloading", loading, b, nil)
	if got := pullSSE(ev(hub.StateDownloading, 0, 0, "")); got[0].Data.(sseStatus).Progress.Value != 0 {
		t.Fatalf("unknown total: %+v", got)
	}
	b, _ = json.Marshal(pullSSE(ev(hub.StateFailed, 1, 2, "disk full"))[0])
	if !strings.Contains(string(b), `"status":"unloaded"`) || !strings.Contains(string(b), `"failed":true`) || !strings.Contains(string(b), "disk full") {
		t.Fatalf("%s", b)
	}
	if got := pullSSE(ev(hub.StateDownloaded, 2, 2, "")); got != nil {
		t.Fatalf("downloaded: %+v", got)
	}
}

// With models_autoload off, GET /props says so as llama.cpp's router with --no-models-autoload
// does, and a request for a model that is not running gets its 400 "model is not loaded" without a
// load, unless it asks ?autoload=true (or 1).
func TestModelsAutoloadOff(t *testing.T) {
	up, _ := recordingUpstream(t)
	srv, fe, _ := testRouter(t, up.URL, func(o *Options) { o.NoModelsAutoload = true })
	code, got := getBody(t, srv.URL+"/props")
	if code != 200 {
		t.Fatalf("%d %s", code, got)
	}
	want := readRecorded(t, "props-noautoload.json")
	checkShape(t, "GET /props", want, got, nil)
	var p, w struct {
		ModelsAutoload *bool `json:"models_autoload"`
	}
	if json.Unmarshal(got, &p); json.Unmarshal(want, &w) != nil || p.ModelsAutoload == nil || *p.ModelsAutoload != *w.ModelsAutoload {
		t.Fatalf("props %s; llama.cpp's router: %s", got, want)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(readRecorded(t, "errors.json"), &all); err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Status int `json:"status"`
		Body   struct {
			Error struct{ Message, Type string } `json:"error"`
		} `json:"body"`
	}
	if err := json.Unmarshal(all["no_models_autoload_not_loaded"], &rec); err != nil || rec.Status == 0 {
		t.Fatalf("recording: %v", err)
	}
	body := `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct {
		state  engine.State
		query  string
		status int
	}{
		{engine.StateUnloaded, "", rec.Status},
		{engine.StateUnloaded, "?autoload=false", rec.Status},
		{engine.StateLoaded, "", 200},
		{engine.StateSleeping, "", 200},
		{engine.StateUnloaded, "?autoload=true", 200},
		{engine.StateUnloaded, "?autoload=1", 200},
	} {
		fe.mu.Lock()
		fe.models["m1"].State = c.state
		fe.mu.Unlock()
		resp, err := http.Post(srv.URL+"/v1/chat/completions"+c.query, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Fatalf("%s %q: %d %s", c.state, c.query, resp.StatusCode, b)
		}
		if c.status != 200 {
			typ, _, msg := decodeError(t, &http.Response{StatusCode: resp.StatusCode, Body: io.NopCloser(strings.NewReader(string(b)))})
			if typ != rec.Body.Error.Type || msg != rec.Body.Error.Message {
				t.Fatalf("%s: error %q %q; llama.cpp's router: %q %q", c.state, typ, msg, rec.Body.Error.Type, rec.Body.Error.Message)
			}
		}
	}
	waitReleased(t, fe, 4)
}

// GET /models lists a model's aliases as llama.cpp's router does (sorted, the ID left out) and the
// tags configured for it, as llama.cpp's router lists its preset's alias and tags keys.
func TestRouterModelsAliasesAndTags(t *testing.T) {
	var rec struct {
		Data []struct {
			ID      string   `json:"id"`
			Aliases []string `json:"aliases"`
			Tags    []string `json:"tags"`
		} `json:"data"`
	}
	want := readRecorded(t, "models-preset.json")
	if err := json.Unmarshal(want, &rec); err != nil || len(rec.Data) == 0 {
		t.Fatalf("recording: %v", err)
	}
	alpha := rec.Data[0]
	if len(alpha.Aliases) < 2 || len(alpha.Tags) < 2 {
		t.Fatalf("recording: %+v", alpha)
	}
	// configured in another order than llama.cpp lists them, with the ID among them
	aliases := append([]string{"m1", alpha.ID}, alpha.Aliases...)
	slices.Reverse(aliases)
	tags := slices.Clone(alpha.Tags)
	slices.Reverse(tags)
	srv, _, _ := testRouter(t, "http://127.0.0.1:1", func(o *Options) {
		o.Engine.(*fakeEngine).add("m1", "http://127.0.0.1:1", aliases...)
		o.Views = view.Builder{Engine: o.Engine, Catalog: o.Catalog, Tags: func(id string) []string { return tags }}
	})
	code, got := getBody(t, srv.URL+"/models")
	if code != 200 {
		t.Fatalf("%d %s", code, got)
	}
	checkShape(t, "GET /models", want, got, modelsSkip)
	var list struct {
		Data []struct {
			ID      string   `json:"id"`
			Aliases []string `json:"aliases"`
			Tags    []string `json:"tags"`
		} `json:"data"`
	}
	if err := json.Unmarshal(got, &list); err != nil || len(list.Data) != 1 {
		t.Fatalf("%v %s", err, got)
	}
	m := list.Data[0]
	wantAliases := append([]string{alpha.ID}, alpha.Aliases...) // here "alpha" is one more alias of m1
	slices.Sort(wantAliases)
	if !slices.Equal(m.Aliases, wantAliases) || !slices.Equal(m.Tags, alpha.Tags) {
		t.Fatalf("aliases %q tags %q; llama.cpp's router lists %q %q for the same names", m.Aliases, m.Tags, alpha.Aliases, alpha.Tags)
	}
}
