package view

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/engine"
)

func TestWaitText(t *testing.T) {
	const gib = int64(1) << 30
	at := time.Date(2026, 1, 1, 12, 3, 4, 0, time.Local)
	beta1 := []engine.WaitModel{{ID: "beta", State: engine.StateLoaded, Active: 1}}
	tests := []struct {
		name string
		st   engine.ModelStatus
		want string
	}{
		{"none waits", engine.ModelStatus{}, ""},
		{"loading with progress", engine.ModelStatus{Progress: 0.4, Wait: &engine.WaitReason{Kind: engine.WaitLoading, Position: 1}}, "loading 40%"},
		{"loading", engine.ModelStatus{Wait: &engine.WaitReason{Kind: engine.WaitLoading, Position: 1}}, "loading"},
		{"fair wait drains beta", engine.ModelStatus{Wait: &engine.WaitReason{Kind: engine.WaitBusy, Position: 2, Need: 5_476_083_302, Free: 2 * gib, Victims: beta1}},
			"waiting: 2nd in line for 5.1 GiB (2.0 GiB free); beta will be unloaded when its 1 request ends"},
		{"every model is busy", engine.ModelStatus{Wait: &engine.WaitReason{Kind: engine.WaitBusy, Position: 1, BusySince: at,
			Holders: []engine.WaitModel{{ID: "alpha", Active: 2}, {ID: "beta", Active: 1}, {ID: "gamma", State: engine.StateLoading}, {ID: "delta", Pinned: true}}}},
			"waiting: every model is busy since 12:03:04 (alpha 2 requests, beta 1, gamma loading, delta pinned)"},
		{"busy, max_loaded, drain due", engine.ModelStatus{Wait: &engine.WaitReason{Kind: engine.WaitBusy, Position: 3, BusySince: at, MaxLoaded: 1, DrainAt: at.Add(30 * time.Second), Holders: beta1}},
			"waiting: 3rd in line; every model is busy since 12:03:04 (beta 1 request); max_loaded 1 reached; busy models drain for it at 12:03:34"},
		{"idle models are being unloaded", engine.ModelStatus{Wait: &engine.WaitReason{Kind: engine.WaitMemory, Position: 1, Need: 4 * gib, Free: gib,
			Victims: []engine.WaitModel{{ID: "a", State: engine.StateStopping}, {ID: "b", State: engine.StateStopping}}}},
			"waiting: 1st in line for 4.0 GiB (1.0 GiB free); a is being unloaded, b is being unloaded"},
		{"short on a GPU", engine.ModelStatus{Wait: &engine.WaitReason{Kind: engine.WaitMemory, Position: 1, Need: 9 * gib, Free: 20 * gib,
			NeedGPU: map[string]int64{"CUDA0": 8 * gib}, FreeGPU: map[string]int64{"CUDA0": 4 * gib}}},
			"waiting: 1st in line for 9.0 GiB (4.0 GiB free of its 8.0 GiB on CUDA0); memory is being freed"},
		{"behind", engine.ModelStatus{Wait: &engine.WaitReason{Kind: engine.WaitBehind, Position: 12, Need: 512 << 20, Free: 0, Behind: "qwen"}},
			"waiting: 12th in line for 512 MiB (0 B free), behind qwen"},
		{"worker", engine.ModelStatus{Wait: &engine.WaitReason{Kind: engine.WaitWorker, Position: 1, Worker: "desk", Holders: []engine.WaitModel{{ID: "big", Active: 1}}}},
			"waiting for worker desk, used by big"},
		{"worker, its user unloading", engine.ModelStatus{Wait: &engine.WaitReason{Kind: engine.WaitWorker, Position: 1, Worker: "desk",
			Holders: []engine.WaitModel{{ID: "big", State: engine.StateStopping}}, Victims: []engine.WaitModel{{ID: "big", State: engine.StateStopping}}}},
			"waiting for worker desk, used by big, which is being unloaded"},
		{"stopping", engine.ModelStatus{Wait: &engine.WaitReason{Kind: engine.WaitStopping, Position: 2}}, "waiting: 2nd in line; its last run is stopping, then it loads again"},
		{"draining", engine.ModelStatus{Active: 3, Wait: &engine.WaitReason{Kind: engine.WaitDraining, Position: 1}}, "waiting: unloading once its 3 requests end, then it loads again"},
	}
	for _, tt := range tests {
		if got := WaitText(tt.st); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// The status object carries the reason with its text, and null when none waits.
func TestStatusWait(t *testing.T) {
	if b, _ := json.Marshal(Status(engine.ModelStatus{State: engine.StateUnloaded})); !strings.Contains(string(b), `"wait":null`) {
		t.Fatalf("no reason: %s", b)
	}
	since := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st := engine.ModelStatus{Queued: 1, Wait: &engine.WaitReason{Kind: engine.WaitBusy, Position: 1, Since: since, BusySince: since, Need: 100,
		Holders: []engine.WaitModel{{ID: "alpha", State: engine.StateLoaded, Active: 1}}}}
	w := Status(st).Wait
	if w == nil || w.Kind != "busy" || w.Position != 1 || !w.Since.Equal(since) || w.BusySince == nil || w.DrainAt != nil ||
		len(w.Holders) != 1 || w.Holders[0].ID != "alpha" || w.Holders[0].ActiveRequests != 1 || w.Victims == nil || w.NeedDevices == nil || w.Text != WaitText(st) {
		t.Fatalf("wait %+v", w)
	}
}
