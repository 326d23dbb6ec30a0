package httpapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/view"
	"github.com/llamatray/llamatray/router/wire"
)

// busyWait makes m1 a model whose one queued request waits behind a busy beta.
func busyWait(fe *fakeEngine) engine.ModelStatus {
	since := time.Date(2026, 1, 1, 12, 3, 4, 0, time.UTC)
	fe.mu.Lock()
	defer fe.mu.Unlock()
	m := fe.models["m1"]
	m.State, m.Queued = engine.StateUnloaded, 1
	m.Wait = &engine.WaitReason{Kind: engine.WaitBusy, Position: 1, Since: since, BusySince: since, DrainAt: since.Add(30 * time.Second),
		Need: 5 << 30, Free: 2 << 30, Holders: []engine.WaitModel{{ID: "beta", State: engine.StateLoaded, Active: 1}}}
	return *m
}

// GET /models gives a queued model's reason in its status: kind, place, memory, the models in the
// way, and the sentence the desktop shows.
func TestModelsWait(t *testing.T) {
	srv, fe, _ := testRouter(t, "", nil)
	st := busyWait(fe)
	resp, err := http.Get(srv.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw struct {
		Data []struct {
			Status struct {
				Wait map[string]any `json:"wait"`
			} `json:"status"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil || len(raw.Data) != 1 {
		t.Fatalf("%v %+v", err, raw)
	}
	w := raw.Data[0].Status.Wait
	holders, _ := w["holders"].([]any)
	if w["kind"] != "busy" || w["position"] != 1.0 || w["need_bytes"] != float64(5<<30) || w["free_bytes"] != float64(2<<30) ||
		w["since"] != "2026-01-01T12:03:04Z" || w["busy_since"] != "2026-01-01T12:03:04Z" || w["drain_at"] != "2026-01-01T12:03:34Z" ||
		len(holders) != 1 || w["text"] != view.WaitText(st) || !strings.HasPrefix(w["text"].(string), "waiting: every model is busy since ") {
		t.Fatalf("wait %v", w)
	}
	if h := holders[0].(map[string]any); h["id"] != "beta" || h["active_requests"] != 1.0 || h["state"] != "loaded" {
		t.Fatalf("holder %v", h)
	}

	fe.mu.Lock()
	fe.models["m1"].Wait, fe.models["m1"].Queued = nil, 0
	fe.mu.Unlock()
	r, err := http.Get(srv.URL + "/v1/models/m1")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var m wire.Model
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil || m.Status.Wait != nil {
		t.Fatalf("nothing queued: %v %+v", err, m.Status.Wait)
	}
}

// A streaming client that asked for progress is told why its request waits, in the same words.
func TestLoadingCommentSaysWhy(t *testing.T) {
	srv, fe := loadingRouter(t, sseUpstream(t, 200).URL, true)
	outcome := slowLoad(fe)
	st := busyWait(fe)
	resp := awaitResponse(t, startStream(t, srv.URL, true))
	br := bufio.NewReader(resp.Body)
	want := ": loading model m1 (" + view.WaitText(st) + ")\n\n"
	if ev := testbed.ReadSSEEvent(t, br); ev != want {
		t.Fatalf("comment %q, want %q", ev, want)
	}
	outcome <- nil
	resp.Body.Close()
	waitReleased(t, fe, 1)
}
