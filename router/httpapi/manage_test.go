package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/wire"
)

func getJSON(t testing.TB, url string, v any) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp
}

func TestListModels(t *testing.T) {
	srv, fe, _ := testRouter(t, "", nil)
	exit := 1
	used := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fe.mu.Lock()
	*fe.models["m1"] = engine.ModelStatus{ID: "m1", Aliases: []string{"fast"}, State: engine.StateLoaded, Active: 2, Queued: 1,
		MemoryBytes: 5 << 30, EstimateBytes: 6 << 30, LastUsed: used, PID: 4242, Port: 40001, Pinned: true,
		Args: []string{"-m", "/models/m1.gguf"}}
	fe.models["gone"] = &engine.ModelStatus{ID: "gone", State: engine.StateFailed, ExitCode: &exit, Error: "exited"}
	fe.mu.Unlock()

	for _, path := range []string{"/models", "/v1/models"} {
		// What the OpenAI SDKs read.
		var sdk struct {
			Object string
			Data   []struct {
				ID      string `json:"id"`
				Object  string `json:"object"`
				Created int64  `json:"created"`
				OwnedBy string `json:"owned_by"`
			}
		}
		getJSON(t, srv.URL+path, &sdk)
		if sdk.Object != "list" || len(sdk.Data) != 2 || sdk.Data[1].ID != "m1" || sdk.Data[1].Object != "model" ||
			sdk.Data[1].OwnedBy != "llamatray" || sdk.Data[1].Created != 1700000000 {
			t.Fatalf("%s: %+v", path, sdk)
		}
		var raw struct{ Data []map[string]json.RawMessage }
		getJSON(t, srv.URL+path, &raw)
		var st map[string]any
		_ = json.Unmarshal(raw.Data[1]["status"], &st)
		for _, k := range []string{"value", "active_requests", "queued", "memory_bytes", "memory_estimate_bytes", "last_used",
			"pid", "port", "exit_code", "pinned", "draining", "error", "next_retry", "unload_at", "args"} {
			if _, ok := st[k]; !ok {
				t.Fatalf("status lacks %q: %v", k, st)
			}
		}
		if st["value"] != "loaded" || st["active_requests"] != 2.0 || st["pid"] != 4242.0 || st["pinned"] != true ||
			st["last_used"] != "2026-01-02T03:04:05Z" || st["next_retry"] != nil || st["memory_estimate_bytes"] != float64(6<<30) {
			t.Fatalf("status %v", st)
		}
		var meta map[string]any
		_ = json.Unmarshal(raw.Data[1]["meta"], &meta)
		if meta["architecture"] != "llama" || meta["quantization"] != "Q4_K_M" || meta["context_length"] != 4096.0 ||
			meta["chat_template"] != true || meta["path"] != "/models/m1.gguf" || meta["size_bytes"] != float64(4<<30) {
			t.Fatalf("meta %v", meta)
		}
		if string(raw.Data[0]["meta"]) != "null" || !strings.Contains(string(raw.Data[0]["status"]), `"exit_code":1`) ||
			string(raw.Data[0]["aliases"]) != "[]" {
			t.Fatalf("uncatalogued model: %s %s", raw.Data[0]["meta"], raw.Data[0]["status"])
		}
	}
	var one wire.Model
	if resp := getJSON(t, srv.URL+"/v1/models/fast", &one); resp.StatusCode != 200 || one.ID != "m1" {
		t.Fatalf("%d %+v", resp.StatusCode, one)
	}
}

func TestManagementCalls(t *testing.T) {
	srv, fe, _ := testRouter(t, "", nil)
	cases := []struct {
		path, body string
		status     int
		call       string
	}{
		{"/models/load", `{"model":"fast"}`, 200, "load m1"},
		{"/models/load?wait=false", `{"model":"m1"}`, 202, "startload m1"},
		{"/models/load?model=fast", ``, 200, "load m1"},
		{"/models/unload", `{"model":"m1"}`, 200, "unload m1"},
		{"/models/unload", `{"model":"fast","force":true}`, 200, "unload m1 force"},
		{"/models/pin", `{"model":"m1"}`, 200, "pin m1"},
		{"/models/pin", `{"model":"m1","pinned":false}`, 200, "unpin m1"},
		{"/models/load", `{"model":"nope"}`, 404, ""},
		{"/models/load", `{"model":"/etc/passwd"}`, 404, ""},
		{"/models/load", `{}`, 400, ""},
		{"/models/unload", `{"model":"m1","force":"yes"}`, 400, ""},
		{"/models/pin", `{"model":`, 400, ""},
	}
	for _, tc := range cases {
		fe.mu.Lock()
		fe.calls = nil
		fe.mu.Unlock()
		resp, b := post(t, srv.URL+tc.path, tc.body)
		fe.mu.Lock()
		calls := slices.Clone(fe.calls)
		fe.mu.Unlock()
		if resp.StatusCode != tc.status || (tc.call != "" && (len(calls) != 1 || calls[0] != tc.call)) || (tc.call == "" && len(calls) != 0) {
			t.Errorf("%s %s: %d %s, calls %v", tc.path, tc.body, resp.StatusCode, b, calls)
		}
	}
	fe.mu.Lock()
	fe.loadErr = &engine.LoadError{Model: "m1", Reason: "crashed", LogTail: []string{"ggml: failed to allocate"}}
	fe.mu.Unlock()
	resp, b := post(t, srv.URL+"/models/load", `{"model":"m1"}`)
	if resp.StatusCode != 503 || !strings.Contains(string(b), "failed to allocate") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

func TestLogsHealthStatus(t *testing.T) {
	start := time.Now().Add(-90 * time.Second)
	srv, fe, _ := testRouter(t, "", func(o *Options) {
		o.Listen = "127.0.0.1:8080"
		o.StartTime = start
		o.Setup = func() wire.Setup {
			return wire.Setup{LlamaServer: wire.LlamaServer{Path: "/usr/bin/llama-server"}, ConfigPath: "/etc/llamatray.toml"}
		}
	})
	fe.mu.Lock()
	fe.logs["m1"] = []string{"line 1", "line 2"}
	fe.models["m1"].Queued = 3
	fe.mu.Unlock()

	var logs struct {
		ID    string
		Lines []string
	}
	if getJSON(t, srv.URL+"/models/logs?model=fast", &logs); logs.ID != "m1" || len(logs.Lines) != 2 {
		t.Fatalf("%+v", logs)
	}
	var health map[string]any
	if getJSON(t, srv.URL+"/health", &health); health["status"] != "ok" {
		t.Fatalf("%v", health)
	}
	var st struct {
		Version       string
		UptimeSeconds int64 `json:"uptime_seconds"`
		Listen        string
		Memory        map[string]any
		Models        map[string]int
		LlamaServer   map[string]string `json:"llama_server"`
		ConfigPath    string            `json:"config_path"`
	}
	getJSON(t, srv.URL+"/api/status", &st)
	if st.Version != "test" || st.UptimeSeconds < 90 || st.Listen != "127.0.0.1:8080" || st.Memory["limit"] != float64(8<<30) ||
		st.Memory["free"] != float64(7<<30) || st.Memory["max_loaded"] != 2.0 || st.Models["total"] != 1 || st.Models["loaded"] != 1 ||
		st.Models["queued"] != 3 || st.LlamaServer["path"] != "/usr/bin/llama-server" ||
		st.ConfigPath != "/etc/llamatray.toml" {
		t.Fatalf("%+v", st)
	}
	for _, k := range []string{"system_total", "system_available", "reserve", "used", "loaded"} {
		if _, ok := st.Memory[k]; !ok {
			t.Fatalf("memory lacks %s", k)
		}
	}
}
