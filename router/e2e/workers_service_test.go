package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/internal/ggmlrpc"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
	"github.com/llamatray/llamatray/router/view"
	"github.com/llamatray/llamatray/router/wire"
	"github.com/llamatray/llamatray/router/worker"
)

// Issue #24's workers through the whole service: [workers.a] and [workers.b] (worker.Serve with the
// real ggml-rpc-server), a model spread over both, one on b alone, one on a worker whose token is
// wrong, one on this machine only.
func TestWorkersThroughTheService(t *testing.T) {
	_, rpc := rpcServerBin(t)
	wa, wb, wc, wd := startE2EWorker(t, "a", rpc), startE2EWorker(t, "b", rpc), startE2EWorker(t, "c", rpc), startE2EWorker(t, "d", rpc)
	ngl := 99
	in := startModels(t, func(id string) ggufwrite.LlamaOptions { return ggufwrite.LlamaOptions{Width: 64, Blocks: 4} },
		[]string{"big", "solo", "refused", "taken", "local"}, func(c *config.Config) {
			c.Workers = map[string]config.Worker{
				"a": {Address: wa.addr, Token: workerToken},
				"b": {Address: wb.addr, Token: workerToken},
				"c": {Address: wc.addr, Token: "not-the-token-0123456789-abcdefghijkl"},
				"d": {Address: wd.addr, Token: workerToken},
			}
			c.Models = map[string]config.Model{
				"big":     {Workers: []string{"a", "b"}, GPULayers: &ngl, CtxSize: 4096, Args: []string{"-lv", "4"}}, // -lv 4: its buffer report
				"solo":    {Workers: []string{"b"}, GPULayers: &ngl, CtxSize: 4096},
				"refused": {Workers: []string{"c"}, GPULayers: &ngl},
				"taken":   {Workers: []string{"d"}, GPULayers: &ngl},
			}
		})
	ctx := context.Background()

	// A model over both workers answers; its child's --rpc is the two links' ends.
	if code, body, err := in.chat(ctx, "big", false, 8); err != nil || code != 200 {
		t.Fatalf("big: %d %v %s", code, err, body)
	}
	ws := workersByName(in)
	st := in.state("big")
	i := slices.Index(st.Args, "--rpc")
	if i < 0 || i+1 >= len(st.Args) || st.Args[i+1] != ws["a"].End+","+ws["b"].End {
		t.Fatalf("big's argv %q, want --rpc %s,%s", st.Args, ws["a"].End, ws["b"].End)
	}
	for _, n := range []string{"a", "b"} {
		w := ws[n]
		if w.State != wire.WorkerUp || w.Model != "big" || len(w.Devices) == 0 || w.Devices[0].Total == 0 || w.Address == "" {
			t.Fatalf("worker %s in the status: %+v, want up, used by big, with its devices and memory", n, w)
		}
	}
	testbed.WaitFor(t, 10*time.Second, "worker c to be checked", func() bool { return workersByName(in)["c"].LastError != "not checked yet" })
	if w := workersByName(in)["c"]; w.State != wire.WorkerRefused || !strings.Contains(w.LastError, "token") {
		t.Fatalf("worker c in the status: %+v, want refused for its token", w)
	}
	// Each worker's RPC device is a device of the budget, and big's buffers on them are its own
	// report's (RPC0, RPC1 in its --rpc order), per worker.
	devs := map[string]bool{}
	for _, d := range in.svc.Engine().Budget().Devices {
		devs[d.Name] = d.Total > 0
	}
	if !devs["a/RPC0"] || !devs["b/RPC0"] {
		t.Fatalf("budget devices %v, want a/RPC0 and b/RPC0 with their memory", devs)
	}
	if st.HeldGPU["a/RPC0"] == 0 || st.HeldGPU["b/RPC0"] == 0 {
		t.Fatalf("big holds %v on its devices, want bytes on a/RPC0 and b/RPC0", st.HeldGPU)
	}
	t.Logf("big holds %v", st.HeldGPU)
	var doc map[string]any
	getJSON(t, in.base+"/api/status", &doc)
	if list, _ := doc["workers"].([]any); len(list) != 4 {
		t.Fatalf("/api/status workers = %v, want four", doc["workers"])
	}

	// A worker that refuses the token fails the load at once, naming it.
	t0 := time.Now()
	code, body, err := in.chat(ctx, "refused", false, 4)
	if err != nil || code < 400 || !strings.Contains(body, "worker c") || !strings.Contains(body, "token") {
		t.Fatalf("refused: %d %v %s, want an error naming worker c and its token", code, err, body)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("the refusal took %s", d)
	}
	t.Logf("a refused token, after %s: %d %s", time.Since(t0).Round(time.Millisecond), code, strings.TrimSpace(body))
	if st := in.state("refused"); st.State != engine.StateFailed || st.PID != 0 {
		t.Fatalf("refused is %s (pid %d), want failed with no child", st.State, st.PID)
	}

	// A worker serving another head's session fails the load at once, naming it.
	other := openE2EEnd(t, wd)
	session, err := net.Dial("tcp", other.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := session.Write(ggmlrpc.Hello()); err != nil { // as llama-server opens its session
		t.Fatal(err)
	}
	testbed.WaitFor(t, 10*time.Second, "worker d to be busy with the other head", func() bool {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		info, err := worker.Check(cctx, wd.addr, workerToken)
		return err == nil && info.Busy
	})
	code, body, err = in.chat(ctx, "taken", false, 4)
	if err != nil || code < 400 || !strings.Contains(body, "worker d") || !strings.Contains(body, "busy") {
		t.Fatalf("taken: %d %v %s, want an error naming worker d, busy", code, err, body)
	}
	t.Logf("a busy worker: %d %s", code, strings.TrimSpace(body))
	session.Close()

	// While big streams, a model for worker b waits, naming the worker and big; once big's stream
	// ends, big (idle) is unloaded for it.
	sctx, stopStream := context.WithCancel(ctx)
	rd := stream(t, sctx, in, "big")
	solo := make(chan string, 1)
	go func() {
		code, body, err := in.chat(ctx, "solo", false, 4)
		if err != nil {
			body = err.Error()
		}
		solo <- http.StatusText(code) + " " + body
	}()
	testbed.WaitFor(t, 30*time.Second, "solo to wait for worker b", func() bool {
		w := in.state("solo").Wait
		return w != nil && w.Kind == engine.WaitWorker && w.Worker == "b" && len(w.Holders) == 1 && w.Holders[0].ID == "big"
	})
	if text := view.WaitText(in.state("solo")); !strings.Contains(text, "waiting for worker b, used by big") {
		t.Fatalf("solo's wait text: %q", text)
	}
	stopStream()
	_, _ = io.Copy(io.Discard, rd)
	select {
	case got := <-solo:
		if !strings.HasPrefix(got, "OK ") {
			t.Fatalf("solo: %s", got)
		}
	case <-time.After(120 * time.Second):
		t.Fatal("solo not answered 120 s after big's stream ended")
	}
	if st := in.state("big"); st.State.Running() {
		t.Fatalf("big is %s beside solo on worker b", st.State)
	}

	// Worker b dies mid-request: the stream ends within 15 s with an error naming it, solo is
	// failed with backoff, and a model on this machine still answers.
	rd = stream(t, ctx, in, "solo")
	t0 = time.Now()
	wb.stop()
	ended := make(chan string, 1)
	go func() { b, _ := io.ReadAll(rd); ended <- string(b) }()
	select {
	case rest := <-ended:
		t.Logf("the stream ended %s after worker b stopped; its end: %q", time.Since(t0).Round(time.Millisecond), tail(rest, 300))
		if !strings.Contains(rest, "worker b") {
			t.Errorf("the stream's end does not name worker b: %q", tail(rest, 300))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("solo's stream still runs 15 s after worker b stopped")
	}
	testbed.WaitFor(t, 15*time.Second, "solo to be failed", func() bool { return in.state("solo").State == engine.StateFailed })
	if st := in.state("solo"); !strings.Contains(st.Error, "worker b") || st.NextRetry.IsZero() {
		t.Fatalf("solo failed with %q (retry %v), want worker b named and a backoff", st.Error, st.NextRetry)
	}
	if code, body, err := in.chat(ctx, "local", false, 4); err != nil || code != 200 {
		t.Fatalf("local after worker b died: %d %v %s", code, err, body)
	}
	if w := workersByName(in)["b"]; w.State != wire.WorkerDown || !strings.Contains(w.LastError, "worker b") {
		t.Fatalf("worker b in the status after it died: %+v", w)
	}

	// A changed [workers.a] section is a new link: with a wrong token, it is refused.
	oldEnd := workersByName(in)["a"].End
	if err := in.svc.Edit(func(c *config.Config) error {
		c.Workers["a"] = config.Worker{Address: wa.addr, Token: "changed-token-0123456789-abcdefghijkl"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	testbed.WaitFor(t, 10*time.Second, "worker a's new link to be refused", func() bool {
		w := workersByName(in)["a"]
		return w.State == wire.WorkerRefused && w.End != oldEnd
	})
}

func workersByName(in *instance) map[string]wire.WorkerStatus {
	out := map[string]wire.WorkerStatus{}
	for _, w := range in.svc.Workers() {
		out[w.Name] = w
	}
	return out
}

// stream starts a long streamed chat with model and returns its body after the first event.
func stream(t *testing.T, ctx context.Context, in *instance, model string) *bufio.Reader {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"model": model, "stream": true, "max_tokens": 3500, "ignore_eos": true,
		"messages": []map[string]string{{"role": "user", "content": "Once"}}})
	req, _ := http.NewRequestWithContext(ctx, "POST", in.base+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("stream %s: %v", model, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("stream %s: %v", model, err)
		}
		if strings.HasPrefix(line, "data: ") {
			return rd
		}
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
