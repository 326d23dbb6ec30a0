package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed"
)

// slowStart writes a launcher that starts the real llama-server after a delay, as a large model on a
// slow disk would take to load, and returns its path. Version and device queries are not delayed.
func slowStart(t *testing.T, delay time.Duration) string {
	t.Helper()
	bin := testbed.RealLlamaServer(t)
	path := filepath.Join(t.TempDir(), "slow-llama-server")
	script := fmt.Sprintf("#!/bin/sh\ncase \"$1\" in --version|--list-devices) ;; *) sleep %.1f ;; esac\nexec %q \"$@\"\n", delay.Seconds(), bin)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue 13 item 1: with a 3 s start and a 1 s queue timeout, a request for an idle, unloaded model
// is served once the model is loaded, and so are POST /models/load and Engine.Load: the deadline is
// for waiting on memory or a slot, not for a load in progress.
func TestQueueTimeoutSparesASlowLoad(t *testing.T) {
	slow := slowStart(t, 3*time.Second)
	in := start(t, []string{"alpha", "beta", "gamma"}, func(c *config.Config) {
		c.LlamaServer = slow
		c.QueueTimeout = config.Duration(time.Second)
	})
	ctx := context.Background()
	began := time.Now()
	code, body, err := in.chat(ctx, "alpha", false, 4)
	if err != nil || code != 200 {
		t.Fatalf("alpha after %s: %d %v %s", time.Since(began).Round(time.Millisecond), code, err, body)
	}
	if waited := time.Since(began); waited < 3*time.Second {
		t.Fatalf("alpha served after %s: the launcher did not delay the load", waited)
	}
	resp, err := http.Post(in.base+"/models/load", "application/json", strings.NewReader(`{"model":"beta"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST /models/load beta: %d %s", resp.StatusCode, b)
	}
	if err := in.svc.Engine().Load(ctx, "gamma"); err != nil {
		t.Fatalf("Load gamma: %v", err)
	}
}

// issue 13 item 2: a fair-wait drain ends with the request it was for. Room for one; a long stream
// on alpha; a request for beta waits past fair_wait (alpha drains) and its client gives up; then a
// new request for alpha is served by the same child while the long stream still runs.
func TestFairWaitDrainEndsWithItsRequest(t *testing.T) {
	in := startWidth(t, slowWidth, []string{"alpha", "beta"}, func(c *config.Config) {
		c.Defaults.CtxSize = 2048
		c.MaxLoaded = 1
		c.FairWait = config.Duration(500 * time.Millisecond)
		c.QueueTimeout = config.Duration(time.Minute)
	})
	ctx := context.Background()
	if err := in.svc.Engine().Load(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	pid := in.state("alpha").PID
	req, _ := http.NewRequestWithContext(ctx, "POST", in.base+"/v1/chat/completions", bytes.NewReader(chatBody("alpha", true, 1500)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", err, resp)
	}
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	streamDone := make(chan time.Time, 1)
	go func() {
		io.Copy(io.Discard, rd)
		resp.Body.Close()
		streamDone <- time.Now()
	}()

	bctx, bcancel := context.WithCancel(ctx)
	bDone := make(chan struct{})
	go func() {
		defer close(bDone)
		in.chat(bctx, "beta", false, 4)
	}()
	testbed.WaitFor(t, 10*time.Second, "alpha to drain for beta", func() bool { return in.state("alpha").Draining })
	bcancel() // beta's client gives up
	<-bDone
	testbed.WaitFor(t, 10*time.Second, "alpha's drain to be called off", func() bool { return !in.state("alpha").Draining })

	actx, acancel := context.WithTimeout(ctx, 20*time.Second)
	defer acancel()
	code, body, err := in.chat(actx, "alpha", false, 4)
	served := time.Now()
	if err != nil || code != 200 {
		t.Fatalf("alpha after beta left: %d %v %s", code, err, body)
	}
	select {
	case end := <-streamDone:
		t.Fatalf("the short request was served %s after the long stream ended, not beside it", served.Sub(end))
	default:
	}
	if st := in.state("alpha"); st.PID != pid || st.State != engine.StateLoaded {
		t.Fatalf("alpha %s with pid %d, want the same child (%d) loaded", st.State, st.PID, pid)
	}
	<-streamDone
}

// issue 13 item 3: a sleeping model whose request is queued first is woken, not evicted for a model
// queued after it. A large model s sleeps (its weights freed); y streams; x is idle. The memory limit
// is set so that waking s needs x evicted, and b, queued after s, would fit only if s were evicted
// too: s must be woken (no stop, no cold load) and b must wait.
func TestSleepingWaiterWokenNotEvicted(t *testing.T) {
	width := func(id string) int {
		if id == "s" {
			return 1024
		}
		return slowWidth
	}
	sleep := config.Duration(time.Second)
	in := startShapes(t, width, []string{"s", "x", "y", "b"}, func(c *config.Config) {
		c.Defaults.CtxSize = 2048
		c.MemoryReserve = 0
		c.Models = map[string]config.Model{"s": {IdleSleep: &sleep}}
	})
	ctx := context.Background()
	eng := in.svc.Engine()
	code, body, err := in.chat(ctx, "s", false, 4)
	if err != nil || code != 200 {
		t.Fatalf("s: %d %v %s", code, err, body)
	}
	for _, id := range []string{"x", "y"} {
		if err := eng.Load(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	testbed.WaitFor(t, 30*time.Second, "s asleep and measured asleep", func() bool {
		st := in.state("s")
		return st.State == engine.StateSleeping && st.MemoryBytes > 0 && st.MemoryBytes < st.EstimateBytes/2
	})
	testbed.WaitFor(t, 10*time.Second, "x and y measured", func() bool { return in.state("x").MemoryBytes > 0 && in.state("y").MemoryBytes > 0 })

	// y streams for the rest of the test's decisions.
	req, _ := http.NewRequestWithContext(ctx, "POST", in.base+"/v1/chat/completions", bytes.NewReader(chatBody("y", true, 1500)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", err, resp)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatal(err)
	}

	s, x, b := in.state("s"), in.state("x"), in.state("b")
	xHeld := max(x.MemoryBytes, b.EstimateBytes) // x counts what it was loaded with: the estimate of its shape, b's
	wake := s.EstimateBytes - s.MemoryBytes
	short := xHeld - b.EstimateBytes/2 // waking s fits once x is gone, with half of b's need to spare
	cfg := in.svc.Config()
	cfg.MemoryLimit = config.Size(eng.Budget().Used + wake - short)
	if err := in.svc.Edit(func(c *config.Config) error { *c = cfg.Clone(); return nil }); err != nil {
		t.Fatal(err)
	}
	t.Logf("s asleep %d MiB, wakes to %d MiB; x %d MiB; b needs %d MiB; limit %d MiB",
		s.MemoryBytes>>20, s.EstimateBytes>>20, xHeld>>20, b.EstimateBytes>>20, int64(cfg.MemoryLimit)>>20)

	events, cancel := eng.Subscribe()
	defer cancel()
	sDone := make(chan error, 1)
	go func() {
		code, body, err := in.chat(ctx, "s", false, 4)
		if err == nil && code != 200 {
			err = fmt.Errorf("s: %d %s", code, body)
		}
		sDone <- err
	}()
	testbed.WaitFor(t, 10*time.Second, "s queued", func() bool { st := in.state("s"); return st.Queued == 1 || st.Active == 1 })
	bDone := make(chan error, 1)
	go func() {
		code, body, err := in.chat(ctx, "b", false, 4)
		if err == nil && code != 200 {
			err = fmt.Errorf("b: %d %s", code, body)
		}
		bDone <- err
	}()
	if err := <-sDone; err != nil {
		t.Fatal(err)
	}
	// Up to the lease that served s (after it, s is idle and may go), s was neither stopped nor loaded.
	for served := false; !served; {
		ev := <-events
		switch {
		case ev.Model != "s":
		case ev.Kind == "lease" && ev.Active > 0:
			served = true
		case ev.Kind == "state" && (ev.State == engine.StateStopping || ev.State == engine.StateLoading):
			t.Fatalf("s went %s (%s) before its queued request was served: evicted and cold loaded instead of woken", ev.State, ev.Message)
		}
	}
	io.Copy(io.Discard, rd)
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
}

// issue 13 item 6: lowering max_loaded while the models are idle stops the least recently used of
// them at once; the most recently used stays.
func TestLoweredMaxLoadedStopsIdleModels(t *testing.T) {
	in := start(t, []string{"alpha", "beta", "gamma"}, nil)
	ctx := context.Background()
	for _, id := range []string{"alpha", "beta", "gamma"} {
		if code, body, err := in.chat(ctx, id, false, 2); err != nil || code != 200 {
			t.Fatalf("%s: %d %v %s", id, code, err, body)
		}
	}
	cfg := in.svc.Config()
	cfg.MaxLoaded = 1
	if err := in.svc.Edit(func(c *config.Config) error { *c = cfg.Clone(); return nil }); err != nil {
		t.Fatal(err)
	}
	in.waitState("alpha", 10*time.Second, engine.StateUnloaded)
	in.waitState("beta", 10*time.Second, engine.StateUnloaded)
	if st := in.state("gamma"); st.State != engine.StateLoaded {
		t.Fatalf("gamma, the most recently used, is %s", st.State)
	}
}
