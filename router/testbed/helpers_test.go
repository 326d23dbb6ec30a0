package testbed_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
)

// client opens a new connection per request: llama-server (and the fake)
// closes a connection after a streamed response, which a pooled connection
// would only notice as an EOF on its next request.
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// fakeOpts describes one fake llama-server to start.
type fakeOpts struct {
	args    []string // flags after -m and --port
	env     []string // extra environment, e.g. FAKE_LLAMA_TOKENS=3
	sidecar string   // JSON written to <model>.fake.json when not empty
	child   bool     // run as a router child: LLAMA_SERVER_ROUTER_PORT set, stdin piped
	port    int      // 0 picks a free one
}

// fakeProc is a running fake llama-server.
type fakeProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	port   int
	url    string
	model  string
	record string
	stdin  io.WriteCloser // set for router children
	stdout syncBuffer
	stderr syncBuffer
	done   chan struct{} // closed when the process has exited
	code   int           // exit code, valid once done is closed
}

// syncBuffer is a bytes.Buffer safe for the process's copy goroutines and the test.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startFake(t *testing.T, o fakeOpts) *fakeProc {
	t.Helper()
	bin := testbed.FakeLlamaServer(t)
	dir := t.TempDir()
	p := &fakeProc{t: t, model: filepath.Join(dir, "model.gguf"), record: filepath.Join(dir, "record.jsonl"), done: make(chan struct{})}
	if err := os.WriteFile(p.model, []byte("not a real GGUF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if o.sidecar != "" {
		if err := os.WriteFile(p.model+".fake.json", []byte(o.sidecar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.port = o.port
	if p.port == 0 {
		p.port = testbed.FreePort(t)
	}
	p.url = "http://127.0.0.1:" + strconv.Itoa(p.port)
	p.cmd = exec.Command(bin, append([]string{"-m", p.model, "--port", strconv.Itoa(p.port)}, o.args...)...)
	for _, kv := range os.Environ() { // hermetic: no knobs or router port from the caller
		if !strings.HasPrefix(kv, "FAKE_LLAMA_") && !strings.HasPrefix(kv, "LLAMA_SERVER_ROUTER_PORT=") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, "FAKE_LLAMA_RECORD="+p.record)
	p.cmd.Env = append(p.cmd.Env, o.env...)
	if o.child {
		p.cmd.Env = append(p.cmd.Env, "LLAMA_SERVER_ROUTER_PORT=8080")
		w, err := p.cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		p.stdin = w
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("fake stdout:\n%s\nfake stderr:\n%s", p.stdout.String(), p.stderr.String())
		}
	})
	return p
}

// exited reports whether the process has ended.
func (p *fakeProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *fakeProc) wait() int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(10 * time.Second):
		p.t.Fatalf("fake llama-server did not exit")
		return 0
	}
}

// waitReady waits for /health to answer 200.
func (p *fakeProc) waitReady() {
	p.t.Helper()
	testbed.WaitFor(p.t, 10*time.Second, "the fake to become healthy", func() bool {
		if p.exited() {
			p.t.Fatalf("fake exited with %d before becoming healthy", p.code)
		}
		code, _, err := p.try("GET", "/health", "")
		return err == nil && code == 200
	})
}

// try sends one request and returns status and body.
func (p *fakeProc) try(method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, p.url+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

// call sends one request that must succeed at the HTTP level, and decodes a JSON body into out.
func (p *fakeProc) call(method, path, body string, out any) int {
	p.t.Helper()
	code, b, err := p.try(method, path, body)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			p.t.Fatalf("%s %s: decode %q: %v", method, path, b, err)
		}
	}
	return code
}

// events returns the recorded events named name.
func (p *fakeProc) events(name string) []testbed.RecordEvent {
	var out []testbed.RecordEvent
	for _, ev := range testbed.ReadRecord(p.t, p.record) {
		if ev.Event == name {
			out = append(out, ev)
		}
	}
	return out
}

// stateLines returns the router state lines printed so far, decoded.
func (p *fakeProc) stateLines() []stateLine {
	p.t.Helper()
	var out []stateLine
	for _, line := range strings.Split(p.stdout.String(), "\n") {
		rest, ok := strings.CutPrefix(line, "cmd_child_to_router:state:")
		if !ok {
			continue
		}
		var sl stateLine
		if err := json.Unmarshal([]byte(rest), &sl); err != nil {
			p.t.Fatalf("state line %q: %v", line, err)
		}
		out = append(out, sl)
	}
	return out
}

type stateLine struct {
	State   string          `json:"state"`
	Payload json.RawMessage `json:"payload"`
}

// states lists just the state names, in order.
func states(lines []stateLine) string {
	var names []string
	for _, l := range lines {
		names = append(names, l.State)
	}
	return strings.Join(names, ",")
}

// rssMB reads a process's resident set in MiB (Linux only).
func rssMB(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read RSS: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatalf("parse %q: %v", line, err)
			}
			return kb / 1024
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
