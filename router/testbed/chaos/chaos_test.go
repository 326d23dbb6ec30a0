package main

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed/bench/harness"
)

// A small chaos run against the real llama-server: 200+ requests from 8 clients over three tiny
// models with room for one, with the same faults and assertions as the full run.
func TestSmallChaosRun(t *testing.T) {
	bin := os.Getenv("LLAMA_SERVER")
	if bin == "" {
		t.Skip("LLAMA_SERVER not set: run `make llama-server` and export LLAMA_SERVER=... (or `make chaos-small`) to run the small chaos run")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("LLAMA_SERVER=%s: %v", bin, err)
	}
	p := defaults()
	p.llamaServer = bin
	p.requests = 200
	p.clients = 8
	p.widths = []int{128, 192, 256}
	p.blocks = 2
	p.queueTimeout = 5 * time.Second
	p.fairWait = 500 * time.Millisecond
	p.pressureFor = 3 * time.Second
	p.duration = 90 * time.Second // a hard stop well inside the test's two minutes
	p.progress = testWriter{t}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, err := runChaos(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	counts, violations := run.verdict()
	var b strings.Builder
	run.print(&b, counts, violations)
	t.Log(b.String())
	run.cleanup(len(violations) > 0)
	for _, v := range violations {
		t.Error(v)
	}
	if counts[served] == 0 {
		t.Error("no request was served")
	}
	if run.facts.evictions+run.facts.drains == 0 {
		t.Error("the models never took turns: no eviction and no drain")
	}
	if len(run.records) < p.requests {
		t.Errorf("%d requests answered, want at least %d", len(run.records), p.requests)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestClassify(t *testing.T) {
	t0 := time.Now()
	kill := killInfo{model: "b", pid: 42, at: t0.Add(10 * time.Second)}
	failedAt := kill.at.Add(20 * time.Millisecond)
	res := func(start, end time.Duration, status int, code, retry string, err error, complete bool) harness.Result {
		return harness.Result{Start: t0.Add(start), End: t0.Add(end), Latency: end - start, Status: status, Code: code, RetryAfter: retry, Err: err, Complete: complete}
	}
	cut := errors.New("stream ended without [DONE]")
	tests := []struct {
		name  string
		model string
		res   harness.Result
		want  outcome
	}{
		{"served", "a", res(0, time.Second, 200, "", "", nil, true), served},
		{"abandoned", "a", harness.Result{Status: 200, Abandoned: true}, abandoned},
		{"queue timeout after the deadline", "a", res(0, 5*time.Second, 503, "queue_timeout", "5", nil, false), queueTimeout},
		{"queue timeout without Retry-After", "a", res(0, 5*time.Second, 503, "queue_timeout", "", nil, false), violation},
		{"queue timeout too early", "a", res(0, time.Second, 503, "queue_timeout", "5", nil, false), violation},
		{"stream cut on another model", "a", res(9*time.Second, 11*time.Second, 200, "", "", cut, false), violation},
		{"stream cut on the killed model", "b", res(9*time.Second, 11*time.Second, 200, "", "", cut, false), killedInFlight},
		{"502 leased just before the engine noticed", "b", res(10*time.Second+50*time.Millisecond, 11*time.Second, 502, "", "", nil, false), killedInFlight},
		{"502 long after the kill", "b", res(20*time.Second, 21*time.Second, 502, "", "", nil, false), violation},
		{"crash backoff 503", "b", res(11*time.Second, 11*time.Second, 503, "model_load_failed", "1", nil, false), crashBackoff},
		{"load failure on another model", "a", res(11*time.Second, 11*time.Second, 503, "model_load_failed", "1", nil, false), violation},
		{"error that ended before the kill", "b", res(0, 5*time.Second, 502, "", "", nil, false), violation},
		{"507", "c", res(0, time.Second, 507, "model_too_large", "", nil, false), tooLarge},
		{"no answer", "a", res(0, time.Second, 0, "", "", io.ErrUnexpectedEOF, false), violation},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := classify(record{model: tc.model, res: tc.res}, kill, failedAt, 5*time.Second)
			if got != tc.want {
				t.Fatalf("got %s (%s), want %s", got, why, tc.want)
			}
			if (got == violation) != (why != "") && got != tooLarge {
				t.Fatalf("%s with reason %q", got, why)
			}
		})
	}
}

func TestAnalyze(t *testing.T) {
	t0 := time.Now()
	ev := func(ms int, model string, kind engine.EventKind, st engine.State, active int, c engine.Cause, forModel string) engine.Event {
		return engine.Event{Time: t0.Add(time.Duration(ms) * time.Millisecond), Model: model, Kind: kind, State: st, Active: active, Cause: c, For: forModel}
	}
	f := analyze([]engine.Event{
		ev(0, "a", engine.EventState, engine.StateLoading, 0, "", ""),
		ev(1, "a", engine.EventState, engine.StateLoaded, 0, "", ""),
		ev(2, "a", engine.EventLease, engine.StateLoaded, 1, "", ""),
		ev(3, "a", engine.EventLease, engine.StateLoaded, 0, "", ""),
		ev(4, "a", engine.EventState, engine.StateStopping, 0, engine.CauseEvicted, "b"),
		ev(5, "b", engine.EventState, engine.StateLoading, 0, "", ""),
		ev(6, "a", engine.EventState, engine.StateUnloaded, 0, "", ""),
		ev(7, "b", engine.EventState, engine.StateLoaded, 0, "", ""),
		ev(8, "b", engine.EventState, engine.StateLoaded, 2, engine.CauseFairWait, "c"),
		ev(9, "b", engine.EventState, engine.StateStopping, 2, engine.CausePressure, ""),
		ev(10, "b", engine.EventState, engine.StateStopping, 1, engine.CauseForced, ""),
		ev(11, "b", engine.EventState, engine.StateFailed, 0, engine.CauseFailed, ""),
		ev(12, "", engine.EventResync, "", 0, "", ""),
		ev(13, "c", engine.EventPressure, engine.StateStopping, 0, engine.CausePressure, ""),
	})
	if f.loads != 2 || f.evictions != 1 || f.drains != 1 || f.pressure != 1 || f.resyncs != 1 {
		t.Errorf("loads %d evictions %d drains %d pressure %d resyncs %d, want 2 1 1 1 1", f.loads, f.evictions, f.drains, f.pressure, f.resyncs)
	}
	if f.maxRunning != 2 {
		t.Errorf("maxRunning %d, want 2 (b loading while a still stopping)", f.maxRunning)
	}
	if len(f.stoppingWithLease) != 1 || f.stoppingWithLease[0].Cause != engine.CausePressure {
		t.Errorf("stoppingWithLease = %+v, want only the memory pressure one", f.stoppingWithLease)
	}
	if got := f.failedAfter("b", t0.Add(10*time.Millisecond)); !got.Equal(t0.Add(11 * time.Millisecond)) {
		t.Errorf("failedAfter = %v", got)
	}
	if got := f.failedAfter("b", t0.Add(12*time.Millisecond)); !got.IsZero() {
		t.Errorf("failedAfter a later time = %v, want zero", got)
	}
}

func TestRoomForOne(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		learned []int64
		limit   int64
		ok      bool
	}{
		{[]int64{74 * mib, 108 * mib, 150 * mib}, 166 * mib, true}, // pair 182, largest 150
		{[]int64{150 * mib, 74 * mib, 108 * mib}, 166 * mib, true}, // order does not matter
		{[]int64{20 * mib, 30 * mib, 100 * mib}, 75 * mib, false},  // two small ones together are below the largest
		{[]int64{50 * mib, 50 * mib, 98 * mib}, 99 * mib, false},   // too tight
		{[]int64{50 * mib}, 0, false},
	}
	for _, tc := range tests {
		limit, ok := roomForOne(tc.learned)
		if ok != tc.ok || (tc.ok && limit != tc.limit) {
			t.Errorf("roomForOne(%v) = %d MiB, %v; want %d MiB, %v", tc.learned, limit/mib, ok, tc.limit/mib, tc.ok)
		}
	}
}
