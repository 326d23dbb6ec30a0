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
