// Package e2e runs Llamatray against a real llama-server. Set LLAMA_SERVER to its path (`make e2e`
// fetches one and does so); without it every test here is skipped, saying why.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adrg/xdg"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// instance is a Llamatray service in front of the real llama-server, on a free loopback port.
type instance struct {
	t    *testing.T
	svc  *service.Service
	base string
	dir  string
}

func start(t *testing.T, models []string, tune func(*config.Config)) *instance {
	return startWidth(t, 64, models, tune)
}

// slowWidth makes models slow enough (a few ms per token with one thread) that a long stream is still
// running while a test looks at the engine.
const slowWidth = 256

func startWidth(t *testing.T, width int, models []string, tune func(*config.Config)) *instance {
	return startShapes(t, func(string) int { return width }, models, tune)
}

// startShapes is start with each model's width (n_embd) chosen by widthOf.
func startShapes(t *testing.T, widthOf func(id string) int, models []string, tune func(*config.Config)) *instance {
	t.Helper()
	return startModels(t, func(id string) ggufwrite.LlamaOptions { return ggufwrite.LlamaOptions{Width: widthOf(id), Blocks: 2} }, models, tune)
}

// startModels is startShapes with each model's shape given whole (width and blocks).
func startModels(t *testing.T, shapeOf func(id string) ggufwrite.LlamaOptions, models []string, tune func(*config.Config)) *instance {
	t.Helper()
	bin := testbed.RealLlamaServer(t)
	dir := t.TempDir()
	for i, id := range models {
		o := shapeOf(id)
		o.Seed, o.Name = int64(i+1), id
		if err := ggufwrite.WriteLlama(filepath.Join(dir, id+".gguf"), o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(xdg.Reload) // registered first, so it runs after the variables are restored
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	xdg.Reload()
	cfg := config.Default()
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg.ModelDirs = []string{dir}
	cfg.ScanDefaultDirs = false
	cfg.LlamaServer = bin
	cfg.Defaults.CtxSize = 512
	cfg.Defaults.Args = []string{"-t", "1"} // two shared cores: one thread per child is fastest here
	cfg.LogLevel = "debug"
	if tune != nil {
		tune(&cfg)
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	svc, err := service.New(cfg, service.Options{Version: "e2e", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := svc.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		for _, m := range svc.Engine().Models() {
			if m.Active != 0 {
				t.Errorf("%s: %d leases left", m.ID, m.Active)
			}
		}
	})
	return &instance{t: t, svc: svc, base: "http://" + svc.ListenAddr(), dir: dir}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func chatBody(model string, stream bool, maxTokens int) []byte {
	b, _ := json.Marshal(map[string]any{
		"model":      model,
		"stream":     stream,
		"max_tokens": maxTokens,
		"ignore_eos": true, // a random-weight model may pick end-of-sequence at once
		"messages":   []map[string]string{{"role": "user", "content": "Say something."}},
	})
	return b
}

// chat posts a chat completion and returns the status and the body.
func (in *instance) chat(ctx context.Context, model string, stream bool, maxTokens int) (int, string, error) {
	return in.post(ctx, "/v1/chat/completions", string(chatBody(model, stream, maxTokens)))
}

// post sends body as JSON to path and returns the status and the body.
func (in *instance) post(ctx context.Context, path, body string) (int, string, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", in.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func (in *instance) state(id string) engine.ModelStatus {
	st, err := in.svc.Engine().Model(id)
	if err != nil {
		in.t.Fatal(err)
	}
	return st
}

func (in *instance) waitState(id string, timeout time.Duration, want engine.State) {
	in.t.Helper()
	testbed.WaitFor(in.t, timeout, fmt.Sprintf("%s to be %s", id, want), func() bool { return in.state(id).State == want })
}

// Two tiny models with room for one: load, serve, sleep, wake, unload; an active stream survives a
// request that needs the other model, which waits and is served once the stream ends.
func TestRoomForOneSleepWakeUnload(t *testing.T) {
	in := startWidth(t, slowWidth, []string{"alpha", "beta"}, func(c *config.Config) {
		c.Defaults.CtxSize = 2048
		c.MaxLoaded = 1
		c.IdleSleep = config.Duration(2 * time.Second)
	})
	ctx := context.Background()
	code, body, err := in.chat(ctx, "alpha", false, 8)
	if err != nil || code != 200 || !strings.Contains(body, "choices") {
		t.Fatalf("alpha: %d %v %s", code, err, body)
	}
	in.waitState("alpha", 30*time.Second, engine.StateSleeping)
	code, _, err = in.chat(ctx, "alpha", false, 4) // wakes it
	if err != nil || code != 200 {
		t.Fatalf("wake: %d %v", code, err)
	}

	// A long stream on alpha; beta must wait for it, not cut it.
	in.streamOutlastsOtherModel(ctx, "alpha", "beta")
	if st := in.state("alpha"); st.State != engine.StateUnloaded {
		t.Fatalf("alpha after beta loaded: %s", st.State)
	}
	if err := in.svc.Engine().Unload(ctx, "beta", false); err != nil {
		t.Fatal(err)
	}
	if st := in.state("beta"); st.State != engine.StateUnloaded {
		t.Fatalf("beta after unload: %s", st.State)
	}
}

// 300 sequential streamed requests through the router with 0 failures: llama-server closing a
// kept-alive connection after a stream must never surface as a 502.
func TestSequentialStreams(t *testing.T) {
	in := start(t, []string{"alpha"}, nil)
	n := 300
	if testing.Short() {
		n = 50
	}
	for i := 0; i < n; i++ {
		code, body, err := in.chat(context.Background(), "alpha", true, 4)
		if err != nil || code != 200 || !strings.Contains(body, "[DONE]") {
			t.Fatalf("request %d: %d %v %q", i, code, err, body)
		}
	}
}

// A client that disconnects mid-stream releases its lease and cancels the generation.
func TestClientDisconnectMidStream(t *testing.T) {
	in := start(t, []string{"alpha"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", in.base+"/v1/chat/completions", bytes.NewReader(chatBody("alpha", true, 2000)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if st := in.state("alpha"); st.Active != 1 {
		t.Fatalf("active %d during stream", st.Active)
	}
	cancel()
	resp.Body.Close()
	testbed.WaitFor(t, 10*time.Second, "lease released", func() bool { return in.state("alpha").Active == 0 })
	code, _, err := in.chat(context.Background(), "alpha", false, 4)
	if err != nil || code != 200 {
		t.Fatalf("after disconnect: %d %v", code, err)
	}
}

func TestMain(m *testing.M) {
	if os.Getenv("LLAMA_SERVER") == "" {
		fmt.Println("e2e: LLAMA_SERVER not set: skipping the end-to-end suite (run `make e2e` to fetch a real llama-server and run it)")
	}
	os.Exit(m.Run())
}

// streamOutlastsOtherModel streams a long answer from model a, and while it runs asks model b, which
// has no room: b must queue, a must stay loaded with its lease, the stream must end complete, and then
// b must be served.
func (in *instance) streamOutlastsOtherModel(ctx context.Context, a, b string) {
	t := in.t
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", in.base+"/v1/chat/completions", bytes.NewReader(chatBody(a, true, 1500)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", err, resp)
	}
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	otherDone := make(chan error, 1)
	go func() {
		code, body, err := in.chat(ctx, b, false, 4)
		if err == nil && code != 200 {
			err = fmt.Errorf("%s: %d %s", b, code, body)
		}
		otherDone <- err
	}()
	testbed.WaitFor(t, 10*time.Second, b+" queued", func() bool { return in.state(b).Queued == 1 })
	if st := in.state(a); st.State != engine.StateLoaded || st.Active != 1 {
		t.Fatalf("%s during its stream: %+v", a, st)
	}
	rest, err := io.ReadAll(rd)
	resp.Body.Close()
	if err != nil || !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("stream cut: %v (%d bytes)", err, len(rest))
	}
	if err := <-otherDone; err != nil {
		t.Fatal(err)
	}
}
