package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/httpapi"
	"github.com/llamatray/llamatray/router/wire"
)

// engineStub is a small engine with two models; it records management calls.
type engineStub struct {
	mu    sync.Mutex // guards calls
	calls []string
}

func (e *engineStub) record(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, s)
}

func (e *engineStub) Resolve(name string) (string, error) {
	switch name {
	case "m1", "fast":
		return "m1", nil
	case "m2":
		return "m2", nil
	}
	return "", &engine.UnknownModelError{Name: name, Suggestions: []string{"m1"}}
}

func (e *engineStub) AcquireID(ctx context.Context, id string) (*engine.Lease, error) {
	return nil, engine.ErrClosed
}
func (e *engineStub) Load(ctx context.Context, name string) error {
	e.record("load " + name)
	return nil
}
func (e *engineStub) StartLoad(name string) error { e.record("startload " + name); return nil }
func (e *engineStub) Unload(ctx context.Context, name string, force bool) error {
	if force {
		name += " force"
	}
	e.record("unload " + name)
	return nil
}
func (e *engineStub) KeepAlive(name string, d *time.Duration) error { return nil }

func (e *engineStub) SetPinned(name string, pinned bool) error {
	e.record(fmt.Sprintf("pin %s %v", name, pinned))
	return nil
}
func (e *engineStub) Models() []engine.ModelStatus {
	code := 1
	return []engine.ModelStatus{
		{ID: "m1", Aliases: []string{"fast"}, State: engine.StateLoaded, Active: 1, PID: 7, Port: 4000, LastUsed: time.Unix(1e9, 0), Args: []string{"-m", "x"}},
		{ID: "m2", State: engine.StateFailed, ExitCode: &code, Error: "crashed", NextRetry: time.Unix(2e9, 0), Queued: 1,
			Wait: &engine.WaitReason{Kind: engine.WaitBusy, Position: 1, Since: time.Unix(1e9, 0), BusySince: time.Unix(1e9, 0), Need: 5 << 30, Free: 1 << 30,
				NeedGPU: map[string]int64{"CUDA0": 4 << 30}, FreeGPU: map[string]int64{"CUDA0": 0},
				Holders: []engine.WaitModel{{ID: "m1", State: engine.StateLoaded, Active: 1}}}},
	}
}
func (e *engineStub) Model(name string) (engine.ModelStatus, error) {
	for _, m := range e.Models() {
		if m.ID == name {
			return m, nil
		}
	}
	return engine.ModelStatus{}, &engine.UnknownModelError{Name: name}
}
func (e *engineStub) Budget() engine.Budget { return engine.Budget{Limit: 1 << 30, MaxLoaded: 2} }
func (e *engineStub) Subscribe() (<-chan engine.Event, func()) {
	return make(chan engine.Event), func() {}
}
func (e *engineStub) SubscribeTo(...engine.EventKind) (<-chan engine.Event, func()) {
	return e.Subscribe()
}
func (e *engineStub) Logs(name string) []string { return nil }

type catalogStub map[string]catalog.Model

func (c catalogStub) Lookup(name string) (catalog.Model, bool) { m, ok := c[name]; return m, ok }
func (c catalogStub) Has(name string) bool                     { _, ok := c[name]; return ok }

func startInstance(t *testing.T, keys ...string) (*httptest.Server, *engineStub) {
	es := &engineStub{}
	rt := httpapi.New(httpapi.Options{
		Engine:  es,
		Catalog: catalogStub{"m1": {ID: "m1", Path: "/m/m1.gguf", Architecture: "qwen2", Quantization: "Q8_0", SizeBytes: 42, Splits: 1, Mmproj: "/m/mmproj.gguf"}, "m2": {ID: "m2"}},
		Version: "1.2.3",
		APIKeys: keys,
	})
	srv := httptest.NewServer(rt)
	t.Cleanup(srv.Close)
	return srv, es
}

func TestNew(t *testing.T) {
	for listen, want := range map[string]string{
		"127.0.0.1:8080":         "http://127.0.0.1:8080",
		":9000":                  "http://127.0.0.1:9000",
		"0.0.0.0:8080":           "http://127.0.0.1:8080",
		"[::]:8080":              "http://127.0.0.1:8080",
		"[::1]:8080":             "http://[::1]:8080",
		"localhost:1":            "http://localhost:1",
		"localhost":              "http://localhost:8080",
		"http://127.0.0.1:8080/": "http://127.0.0.1:8080",
	} {
		if got := New(listen).Base; got != want {
			t.Errorf("New(%q).Base = %q, want %q", listen, got, want)
		}
	}
}

func TestModelsMirrorsServer(t *testing.T) {
	srv, _ := startInstance(t)
	c := New(srv.Listener.Addr().String())
	ms, err := c.Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].ID != "m1" || ms[0].Object != "model" || ms[0].Status.Value != "loaded" || ms[0].Status.PID != 7 ||
		ms[0].Meta == nil || ms[0].Meta.Mmproj != "/m/mmproj.gguf" || ms[0].Aliases[0] != "fast" || ms[0].Status.LastUsed.Unix() != 1e9 ||
		ms[1].Status.ExitCode == nil || *ms[1].Status.ExitCode != 1 || ms[1].Status.Error != "crashed" {
		t.Fatalf("%+v", ms)
	}
	if w := ms[1].Status.Wait; ms[0].Status.Wait != nil || w == nil || w.Kind != "busy" || w.Position != 1 || len(w.Holders) != 1 ||
		w.Holders[0].ID != "m1" || w.Holders[0].ActiveRequests != 1 || w.NeedDevices["CUDA0"] != 4<<30 || w.BusySince == nil ||
		!strings.HasPrefix(w.Text, "waiting: every model is busy since ") {
		t.Fatalf("wait %+v", ms[1].Status.Wait)
	}
	// Every field the server sends has a home in wire.Model.
	resp, err := http.Get(srv.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var list wire.ModelList
	if err := dec.Decode(&list); err != nil {
		t.Fatalf("wire.ModelList does not mirror /models: %v", err)
	}
	// And every field of /api/status has a home in wire.Status.
	resp, err = http.Get(srv.URL + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec = json.NewDecoder(resp.Body)
	dec.DisallowUnknownFields()
	var st wire.Status
	if err := dec.Decode(&st); err != nil || st.Version != "1.2.3" {
		t.Fatalf("wire.Status does not mirror /api/status: %v %+v", err, st)
	}
}

// strictly decodes the answer to one request, refusing fields the wire type lacks.
func strictly(t *testing.T, method, url, body string, v any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d, %T does not mirror it: %v", method, url, resp.StatusCode, v, err)
	}
}

// The management answers decode into their wire types, field for field.
func TestManageAnswersMirrorServer(t *testing.T) {
	srv, _ := startInstance(t)
	var load wire.ManageAnswer
	if strictly(t, "POST", srv.URL+"/models/load", `{"model":"fast"}`, &load); !load.Success || load.ID != "m1" || load.Status == nil || load.Status.PID != 7 {
		t.Errorf("load %+v", load)
	}
	var pin wire.PinAnswer
	if strictly(t, "POST", srv.URL+"/models/pin", `{"model":"m2","pinned":false}`, &pin); !pin.Success || pin.ID != "m2" || pin.Pinned {
		t.Errorf("pin %+v", pin)
	}
	var logs wire.Logs
	if strictly(t, "GET", srv.URL+"/models/logs?model=m1", "", &logs); logs.ID != "m1" || logs.Lines == nil {
		t.Errorf("logs %+v", logs)
	}
	var h wire.Health
	if strictly(t, "GET", srv.URL+"/health", "", &h); h.Status != "ok" || h.Service != "llamatray" || h.Version != "1.2.3" {
		t.Errorf("health %+v", h)
	}
}

func TestManage(t *testing.T) {
	srv, es := startInstance(t)
	c := New(srv.URL)
	ctx := context.Background()
	if err := c.Load(ctx, "fast"); err != nil {
		t.Fatal(err)
	}
	if err := c.Unload(ctx, "m2", true); err != nil {
		t.Fatal(err)
	}
	if err := c.Pin(ctx, "fast", true); err != nil {
		t.Fatal(err)
	}
	if err := c.Pin(ctx, "m2", false); err != nil {
		t.Fatal(err)
	}
	es.mu.Lock()
	calls := strings.Join(es.calls, ",")
	es.mu.Unlock()
	if calls != "load m1,unload m2 force,pin m1 true,pin m2 false" {
		t.Fatal(calls)
	}
	err := c.Load(ctx, "nope")
	var e *Error
	if !errors.As(err, &e) || e.Status != 404 || e.Code != "model_not_found" || !strings.Contains(e.Error(), "did you mean m1") {
		t.Fatalf("%#v", err)
	}
	st, err := c.Status(ctx)
	if err != nil || st.Version != "1.2.3" || st.Service != "llamatray" || st.Memory.MaxLoaded != 2 || st.Models.Total != 2 || st.Models.Loaded != 1 {
		t.Fatalf("%v %v", st, err)
	}
}

func TestAPIKey(t *testing.T) {
	srv, _ := startInstance(t, "secret")
	c := New(srv.URL)
	var e *Error
	if _, err := c.Models(context.Background()); !errors.As(err, &e) || e.Status != 401 || e.Type != "authentication_error" {
		t.Fatalf("%v", err)
	}
	if err := c.Ping(context.Background()); err != nil {
		t.Fatalf("ping needs no key: %v", err)
	}
	c.APIKey = "secret"
	if _, err := c.Models(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestPing(t *testing.T) {
	srv, _ := startInstance(t)
	if err := New(srv.URL).Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A bare llama-server answers /health too, but is not an instance.
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	}))
	defer bare.Close()
	if err := New(bare.URL).Ping(context.Background()); !errors.Is(err, ErrNotLlamatray) {
		t.Fatalf("bare llama-server: %v", err)
	}
	// Nothing listening.
	addr := bare.Listener.Addr().String()
	bare.Close()
	if err := New(addr).Ping(context.Background()); err == nil || errors.Is(err, ErrNotLlamatray) {
		t.Fatalf("closed port: %v", err)
	}
}

func TestErrorWithoutJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway from a proxy", http.StatusBadGateway)
	}))
	defer srv.Close()
	_, err := New(srv.URL).Models(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Status != 502 || !strings.Contains(e.Error(), "bad gateway from a proxy") {
		t.Fatalf("%v", err)
	}
}
