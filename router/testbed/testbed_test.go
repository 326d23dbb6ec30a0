package testbed_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
)

// recordingTB captures Fatalf instead of stopping the test.
type recordingTB struct {
	testing.TB
	fatal string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Fatalf(format string, args ...any) {
	if r.fatal == "" {
		r.fatal = fmt.Sprintf(format, args...)
	}
}

func TestFreePortIsBindable(t *testing.T) {
	t.Parallel()
	port := testbed.FreePort(t)
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("port %d from FreePort is not free: %v", port, err)
	}
	ln.Close()
}

func TestRealLlamaServerSkipsWithoutEnv(t *testing.T) {
	t.Setenv("LLAMA_SERVER", "")
	var reached bool
	t.Run("inner", func(t *testing.T) {
		testbed.RealLlamaServer(t)
		reached = true
	})
	if reached {
		t.Fatal("RealLlamaServer returned without LLAMA_SERVER set; want a skip")
	}
}

func TestRealLlamaServerReturnsThePath(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "llama-server")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LLAMA_SERVER", bin)
	if got := testbed.RealLlamaServer(t); got != bin {
		t.Fatalf("RealLlamaServer = %q, want %q", got, bin)
	}
	t.Setenv("LLAMA_SERVER", filepath.Join(t.TempDir(), "missing"))
	rec := &recordingTB{TB: t}
	testbed.RealLlamaServer(rec)
	if !strings.Contains(rec.fatal, "missing") {
		t.Fatalf("a missing LLAMA_SERVER gave %q, want a failure naming the path", rec.fatal)
	}
}

func TestWaitFor(t *testing.T) {
	t.Parallel()
	calls := 0
	testbed.WaitFor(t, time.Second, "three calls", func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Fatalf("cond called %d times, want 3", calls)
	}
	rec := &recordingTB{TB: t}
	testbed.WaitFor(rec, 30*time.Millisecond, "something impossible", func() bool { return false })
	if !strings.Contains(rec.fatal, "something impossible") {
		t.Fatalf("timeout message = %q, want it to name the condition", rec.fatal)
	}
}

func TestReadRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if evs := testbed.ReadRecord(t, filepath.Join(dir, "none.jsonl")); evs != nil {
		t.Fatalf("missing file gave %v, want no events", evs)
	}
	path := filepath.Join(dir, "r.jsonl")
	content := `{"event":"start","pid":7,"time":"2026-01-02T03:04:05Z","args":["llama-server","-m","x"]}` + "\n" +
		`{"event":"exit","pid":7,"code":3,"time":"2026-01-02T03:04:06Z"}` + "\n" + `{"event":"req`
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	evs := testbed.ReadRecord(t, path)
	if len(evs) != 2 || evs[0].Event != "start" || evs[0].PID != 7 || len(evs[0].Args) != 3 || evs[1].Code != 3 {
		t.Fatalf("events = %+v", evs)
	}
	if err := os.WriteFile(path, []byte("not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := &recordingTB{TB: t}
	testbed.ReadRecord(rec, path)
	if !strings.Contains(rec.fatal, "r.jsonl:1") {
		t.Fatalf("bad line gave %q, want an error naming file and line", rec.fatal)
	}
}

func TestFakeVersion(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(testbed.FakeLlamaServer(t), "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "version: ") {
		t.Fatalf("--version: %v\n%s", err, out)
	}
}

func TestFakeAnswers503WhileLoading(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOpts{env: []string{"FAKE_LLAMA_LOAD_TIME=400ms"}, args: []string{"--alias", "m1", "--jinja", "--seed", "-1", "-fa"}})
	var body string
	testbed.WaitFor(t, 5*time.Second, "a 503 from /health while loading", func() bool {
		code, b, err := p.try("GET", "/health", "")
		body = string(b)
		return err == nil && code == 503
	})
	if want := `{"error":{"message":"Loading model","type":"unavailable_error","code":503}}`; body != want {
		t.Errorf("loading body = %s, want %s", body, want)
	}
	var models struct{ Data []struct{ ID string } }
	if code := p.call("GET", "/v1/models", "", &models); code != 200 || len(models.Data) != 1 || models.Data[0].ID != "m1" {
		t.Errorf("/v1/models while loading = %d %+v, want 200 with id m1", code, models)
	}
	p.waitReady()
	starts := p.events("start")
	if len(starts) != 1 || starts[0].PID != p.cmd.Process.Pid || !strings.Contains(strings.Join(starts[0].Args, " "), "--alias m1") {
		t.Fatalf("start events = %+v", starts)
	}
	if len(p.events("ready")) != 1 {
		t.Fatal("no ready event recorded")
	}
}

func TestFakeStreamsChatChunkByChunk(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOpts{env: []string{"FAKE_LLAMA_TOKENS=40", "FAKE_LLAMA_TOKEN_DELAY=25ms"}})
	p.waitReady()
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	res, err := client.Post(p.url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	sc := bufio.NewScanner(res.Body)
	var chunks []string
	checkedEarly := false
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		chunks = append(chunks, line)
		if len(chunks) == 2 && !checkedEarly { // the role chunk and the first token
			checkedEarly = true
			var stats struct {
				InFlight int `json:"in_flight"`
			}
			p.call("GET", "/fake/stats", "", &stats)
			if stats.InFlight != 1 {
				t.Errorf("after the first token chunk in_flight = %d, want 1: chunks must arrive while generating", stats.InFlight)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// role + 40 tokens + finish + usage + [DONE]
	if len(chunks) != 44 || chunks[len(chunks)-1] != "[DONE]" {
		t.Fatalf("got %d chunks ending %q, want 44 ending [DONE]", len(chunks), chunks[len(chunks)-1])
	}
	if !strings.Contains(chunks[len(chunks)-2], `"completion_tokens":40`) || !strings.Contains(chunks[len(chunks)-3], `"finish_reason":"stop"`) {
		t.Fatalf("final chunks:\n%s\n%s", chunks[len(chunks)-3], chunks[len(chunks)-2])
	}
	reqs := p.events("request")
	if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" || reqs[0].Model != "m" || !reqs[0].Stream {
		t.Fatalf("request events = %+v", reqs)
	}
}

func TestFakeCancelsWhenClientLeaves(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOpts{env: []string{"FAKE_LLAMA_TOKENS=1000", "FAKE_LLAMA_TOKEN_DELAY=10ms"}})
	p.waitReady()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", p.url+"/completion", strings.NewReader(`{"prompt":"x","stream":true}`))
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(res.Body)
	for n := 0; n < 2 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
		}
	}
	cancel()
	res.Body.Close()
	testbed.WaitFor(t, 5*time.Second, "a cancel event", func() bool { return len(p.events("cancel")) == 1 })
	var stats struct{ Cancels, Completed, InFlight int }
	p.call("GET", "/fake/stats", "", &stats)
	if stats.Cancels != 1 || stats.Completed != 1 {
		t.Fatalf("stats = %+v, want one cancelled task", stats)
	}
}

func TestFakeSigtermExitsZero(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOpts{})
	p.waitReady()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
	if sig := p.events("signal"); len(sig) != 1 || sig[0].Signal != "SIGTERM" {
		t.Fatalf("signal events = %+v", sig)
	}
	if ex := p.events("exit"); len(ex) != 1 || ex[0].Code != 0 {
		t.Fatalf("exit events = %+v", ex)
	}
}

func TestFakeIgnoresSigtermWhenAsked(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOpts{sidecar: `{"ignore_sigterm": true}`})
	p.waitReady()
	p.cmd.Process.Signal(syscall.SIGTERM)
	testbed.WaitFor(t, 5*time.Second, "the signal to be recorded", func() bool { return len(p.events("signal")) == 1 })
	if code := p.call("GET", "/health", "", nil); code != 200 || p.exited() {
		t.Fatalf("after an ignored SIGTERM: health %d, exited %v", code, p.exited())
	}
	p.cmd.Process.Kill()
	if code := p.wait(); code != -1 {
		t.Fatalf("exit code after SIGKILL = %d, want -1 (killed)", code)
	}
}

func TestFakeSleepsAndWakes(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOpts{child: true, args: []string{"--sleep-idle-seconds", "0.3"},
		sidecar: `{"hold_mb": 64, "token_delay": "20ms", "tokens": 50, "wake_time": "50ms"}`})
	p.waitReady()
	checkRSS := runtime.GOOS == "linux"
	if checkRSS {
		if rss := rssMB(t, p.cmd.Process.Pid); rss < 64 {
			t.Fatalf("RSS after load = %d MiB, want >= 64 (hold_mb)", rss)
		}
	}
	testbed.WaitFor(t, 5*time.Second, "is_sleeping", func() bool {
		var props struct {
			IsSleeping bool `json:"is_sleeping"`
		}
		p.call("GET", "/props", "", &props)
		return props.IsSleeping
	})
	if checkRSS {
		testbed.WaitFor(t, 5*time.Second, "RSS to drop while sleeping", func() bool { return rssMB(t, p.cmd.Process.Pid) < 40 })
	}
	testbed.WaitFor(t, 5*time.Second, "a sleeping state line after ready", func() bool {
		return strings.HasSuffix(states(p.stateLines()), "ready,sleeping")
	})

	res, err := client.Post(p.url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"wake up"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for n := 0; n < 2 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
		}
	}
	var props struct {
		IsSleeping bool `json:"is_sleeping"`
	}
	p.call("GET", "/props", "", &props)
	if props.IsSleeping {
		t.Error("is_sleeping while a request streams")
	}
	if checkRSS {
		if rss := rssMB(t, p.cmd.Process.Pid); rss < 64 {
			t.Errorf("RSS after wake = %d MiB, want >= 64", rss)
		}
	}
	testbed.WaitFor(t, 5*time.Second, "loading and ready state lines after the wake", func() bool {
		return strings.HasSuffix(states(p.stateLines()), "sleeping,loading,loading,ready")
	})
	lines := p.stateLines()
	if last := lines[len(lines)-1]; string(last.Payload) != "null" {
		t.Errorf("ready after wake has payload %s, want null", last.Payload)
	}
	var order []string
	for _, ev := range testbed.ReadRecord(t, p.record) {
		order = append(order, ev.Event)
	}
	if got := strings.Join(order, ","); !strings.Contains(got, "ready,sleep,request,wake") {
		t.Fatalf("events = %s, want ready,sleep,request,wake", got)
	}
}

func TestFakeExitsOnRouterCommand(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOpts{child: true, args: []string{"--alias", "child-a"}})
	testbed.WaitFor(t, 5*time.Second, "a ready state line", func() bool { return strings.Contains(states(p.stateLines()), "ready") })
	first, _, _ := strings.Cut(p.stdout.String(), "\n")
	if want := `cmd_child_to_router:state:{"state":"loading","payload":{"stages":["text_model"],"current":"text_model","value":0.0}}`; first != want {
		t.Errorf("first stdout line:\n%s\nwant\n%s", first, want)
	}
	lines := p.stateLines()
	if ready := lines[len(lines)-1]; !strings.Contains(string(ready.Payload), `"id":"child-a"`) {
		t.Errorf("ready payload = %s, want the model's /v1/models entry", ready.Payload)
	}
	fmt.Fprintln(p.stdin, "cmd_router_to_child:exit")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code after the exit command = %d, want 0", code)
	}
}

func TestFakeLogFormat(t *testing.T) {
	t.Parallel()
	prefixed := startFake(t, fakeOpts{})
	plain := startFake(t, fakeOpts{args: []string{"--no-log-prefix", "--no-log-timestamps"}})
	want := regexp.MustCompile(`(?m)^\d+\.\d{2}\.\d{3}\.\d{3} I srv  llama_server: listening on http://127\.0\.0\.1:` + strconv.Itoa(prefixed.port) + `$`)
	testbed.WaitFor(t, 10*time.Second, "the listening line with time and level", func() bool { return want.MatchString(prefixed.stderr.String()) })
	testbed.WaitFor(t, 10*time.Second, "a bare model-loaded line", func() bool {
		return slices.Contains(strings.Split(plain.stderr.String(), "\n"), "srv  llama_server: model loaded")
	})
	if out := prefixed.stdout.String(); out != "" {
		t.Errorf("stdout without LLAMA_SERVER_ROUTER_PORT = %q, want nothing", out)
	}
}

func TestFakeOrphanGuard(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOpts{child: true})
	p.waitReady()
	testbed.WaitFor(t, 5*time.Second, "a ready state line", func() bool { return strings.Contains(states(p.stateLines()), "ready") })
	p.stdin.Close()
	if code := p.wait(); code != 1 {
		t.Fatalf("exit code after stdin EOF = %d, want 1", code)
	}
	if !strings.Contains(p.stderr.String(), "EOF on stdin detected") {
		t.Errorf("stderr lacks the orphan-guard line:\n%s", p.stderr.String())
	}
}

func TestFakePortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	p := startFake(t, fakeOpts{port: port})
	if code := p.wait(); code != 1 {
		t.Fatalf("exit code with the port taken = %d, want 1", code)
	}
	if want := fmt.Sprintf("couldn't bind HTTP server socket, hostname: 127.0.0.1, port: %d", port); !strings.Contains(p.stderr.String(), want) {
		t.Fatalf("stderr lacks %q:\n%s", want, p.stderr.String())
	}
}

func TestFakeSidecarFailLoad(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOpts{child: true, sidecar: `{"fail_load": true, "load_time": "40ms"}`})
	if code := p.wait(); code != 1 {
		t.Fatalf("exit code = %d, want 1", code)
	}
	if !strings.Contains(p.stderr.String(), "failed to load model") {
		t.Errorf("stderr lacks the load failure:\n%s", p.stderr.String())
	}
	if got := states(p.stateLines()); got == "" || strings.Contains(got, "ready") {
		t.Errorf("state lines = %q, want loading progress and no ready", got)
	}
	if ex := p.events("exit"); len(ex) != 1 || ex[0].Code != 1 || len(p.events("ready")) != 0 {
		t.Errorf("record: exit %+v, ready %d", ex, len(p.events("ready")))
	}
}

func TestFakeSidecarOverridesEnvironment(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOpts{env: []string{"FAKE_LLAMA_TOKENS=8"}, sidecar: `{"tokens": 3, "token_delay": 1}`})
	p.waitReady()
	var res struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	p.call("POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, &res)
	if res.Usage.CompletionTokens != 3 {
		t.Fatalf("completion_tokens = %d, want 3 from the sidecar", res.Usage.CompletionTokens)
	}
}

func TestFakeRejectsBadSidecar(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOpts{sidecar: `{"tokenz": 3}`})
	if code := p.wait(); code != 1 {
		t.Fatalf("exit code = %d, want 1", code)
	}
	if !strings.Contains(p.stderr.String(), `unknown field "tokenz"`) {
		t.Fatalf("stderr does not explain the bad sidecar:\n%s", p.stderr.String())
	}
}

func TestFakeCrashesMidStream(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOpts{sidecar: `{"crash_after_requests": 2, "tokens": 6}`})
	p.waitReady()
	if code := p.call("POST", "/completion", `{"prompt":"first"}`, nil); code != 200 {
		t.Fatalf("first request = %d, want 200", code)
	}
	res, err := client.Post(p.url+"/completion", "application/json", strings.NewReader(`{"prompt":"second","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	tokens := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			tokens++
		}
	}
	if tokens != 3 {
		t.Errorf("read %d chunks before the crash, want 3 (half of 6)", tokens)
	}
	if code := p.wait(); code != 3 {
		t.Fatalf("exit code = %d, want 3", code)
	}
}
