package main

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/engine"
)

func TestCheckStarts(t *testing.T) {
	t0 := time.Now()
	record := filepath.Join(t.TempDir(), "fakes.jsonl")
	var lines []string
	start := func(pid int, at time.Duration, args ...string) {
		b, _ := json.Marshal(map[string]any{"event": "start", "pid": pid, "time": t0.Add(at), "args": args})
		lines = append(lines, string(b))
	}
	start(1, 2*time.Second, "fakellama", "-m", "x", "--rpc", "127.0.0.1:1")
	start(2, 3*time.Second, "fakellama", "-m", "y") // no workers: not counted
	start(3, 4*time.Second, "fakellama", "-m", "x", "--rpc", "127.0.0.1:1")
	start(4, 6*time.Second, "fakellama", "-m", "z", "--rpc", "127.0.0.1:1,127.0.0.1:2")
	os.WriteFile(record, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	checks := []workerCheck{
		{at: t0.Add(time.Second), rpc: "127.0.0.1:1"},                 // pid 1's
		{at: t0.Add(5 * time.Second), rpc: "127.0.0.1:1"},             // after pid 3: not its check
		{at: t0.Add(5 * time.Second), rpc: "127.0.0.1:1,127.0.0.1:2"}, // pid 4's
	}
	starts, checked, v := checkStarts(record, checks)
	if starts != 3 || checked != 2 || len(v) != 1 || !strings.Contains(v[0], "pid 3 ") {
		t.Fatalf("starts %d, checked %d, violations %q", starts, checked, v)
	}
}

func TestWorkerSample(t *testing.T) {
	s := &workerSet{dir: t.TempDir(), workers: []simWorker{{"w1", 1024}, {"w2", 1024}}}
	write := func(name string, st rpcState) {
		b, _ := json.Marshal(st)
		os.WriteFile(s.statePath(name), b, 0o644)
	}
	write("w1", rpcState{Total: 1 << 30, Held: 2 << 30, Clients: map[string]int64{"10": 1 << 30, "11": 1 << 30}})
	write("w2", rpcState{Total: 1 << 30, Held: 1 << 29, Clients: map[string]int64{"12": 1 << 29}})
	models := []engine.ModelStatus{
		{ID: "a", State: engine.StateLoaded, Workers: []string{"w2"}},
		{ID: "b", State: engine.StateStopping, Workers: []string{"w1", "w2"}},
		{ID: "c", State: engine.StateUnloaded, Workers: []string{"w1"}},
	}
	held, v := s.sample(models)
	if held["w1/RPC0"] != 2<<30 || held["w2/RPC0"] != 1<<29 {
		t.Fatalf("held %v", held)
	}
	want := []string{"w1/RPC0 holds 2048 MiB, over its 1024 MiB", "worker w1 holds memory for 2 llama-servers", "worker w2 used by 2 models at once: a (loaded), b (stopping)"}
	if len(v) != len(want) {
		t.Fatalf("violations %q", v)
	}
	for i, w := range want {
		if !strings.HasPrefix(v[i], w) {
			t.Errorf("violation %d: %q, want %q...", i, v[i], w)
		}
	}
}

func TestCheckLog(t *testing.T) {
	h := newCheckLog(slog.NewTextHandler(nopWriter{}, nil))
	log := slog.New(h).With("component", "engine")
	log.Info("workers checked", "model", "m", "workers", []string{"w1", "w2"}, "rpc", []string{"127.0.0.1:1", "127.0.0.1:2"})
	log.Info("something else", "rpc", []string{"x"})
	cs := h.snapshot()
	if len(cs) != 1 || cs[0].rpc != "127.0.0.1:1,127.0.0.1:2" || cs[0].at.IsZero() {
		t.Fatalf("checks %+v", cs)
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
