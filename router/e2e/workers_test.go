package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
	"github.com/llamatray/llamatray/router/worker"
)

// Issue #24's workers on real pieces: two workers (worker.Serve, each running llama.cpp's real
// ggml-rpc-server), the head's two link ends, and the real llama-server with --rpc END1,END2.

const workerToken = "e2e-worker-token-0123456789-abcdefgh"

// rpcServerBin is llama.cpp's RPC worker: $GGML_RPC_SERVER, else ggml-rpc-server beside
// $LLAMA_SERVER (where `make llama-server` puts it; rpc-server in llama.cpp's release builds). Absent: skipped, or failed when CI=true.
func rpcServerBin(t *testing.T) (llama, rpc string) {
	t.Helper()
	llama = testbed.RealLlamaServer(t) // skips the whole suite's way without LLAMA_SERVER (make test)
	rpc = os.Getenv("GGML_RPC_SERVER")
	if rpc == "" && llama != "" {
		// Debian's name (make llama-server), then llama.cpp's release builds'.
		for _, n := range []string{"ggml-rpc-server", "rpc-server"} {
			if runtime.GOOS == "windows" {
				n += ".exe"
			}
			rpc = filepath.Join(filepath.Dir(llama), n)
			if _, err := os.Stat(rpc); err == nil {
				break
			}
		}
	}
	missing := ""
	if _, err := os.Stat(rpc); err != nil {
		missing = fmt.Sprintf("no ggml-rpc-server (%v; `make rpc-server` puts it beside llama-server, or set GGML_RPC_SERVER)", err)
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("workers e2e: %s", missing)
		}
		t.Skipf("workers e2e: %s", missing)
	}
	return llama, rpc
}

type e2eWorker struct {
	name, addr string
	cancel     context.CancelFunc
	done       chan error
}

func startE2EWorker(t *testing.T, name, rpc string) *e2eWorker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &e2eWorker{name: name, cancel: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	go func() {
		w.done <- worker.Serve(ctx, worker.Options{Listen: "127.0.0.1:0", Token: workerToken, RPCServer: rpc,
			Threads: 1, Logger: log, Name: name, Version: "e2e", Ready: func(a string) { ready <- a }})
	}()
	select {
	case w.addr = <-ready:
	case err := <-w.done:
		t.Fatalf("worker %s: %v", name, err)
	case <-time.After(60 * time.Second):
		t.Fatalf("worker %s not ready in 60 s", name)
	}
	t.Cleanup(w.stop)
	return w
}

func (w *e2eWorker) stop() {
	w.cancel()
	<-w.done
	w.done <- nil // a second stop returns at once
}

func openE2EEnd(t *testing.T, w *e2eWorker) *worker.End {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := worker.Open(ctx, w.name, w.addr, workerToken, slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// syncBuf is a bytes.Buffer safe for a child's output and the test's reads.
type syncBuf struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var rpcDevice = regexp.MustCompile(`(?m)^\s*RPC(\d): (127\.0\.0\.1:\d+) \((\d+) MiB, (\d+) MiB free\)`)

func TestWorkersListDevicesAndServeASplitModel(t *testing.T) {
	llama, rpc := rpcServerBin(t)
	w1, w2 := startE2EWorker(t, "w1", rpc), startE2EWorker(t, "w2", rpc)
	e1, e2 := openE2EEnd(t, w1), openE2EEnd(t, w2)
	rpcArg := e1.Addr() + "," + e2.Addr()
	checkRPCServersLoopbackOnly(t, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// --rpc before --list-devices: llama-server lists the devices as soon as it parses that flag.
	out, err := exec.CommandContext(ctx, llama, "--rpc", rpcArg, "--list-devices").CombinedOutput()
	if err != nil {
		t.Fatalf("llama-server --rpc %s --list-devices: %v\n%s", rpcArg, err, out)
	}
	devs := rpcDevice.FindAllStringSubmatch(string(out), -1)
	if len(devs) != 2 || devs[0][1] != "0" || devs[0][2] != e1.Addr() || devs[1][1] != "1" || devs[1][2] != e2.Addr() || devs[0][3] == "0" {
		t.Fatalf("llama-server --rpc %s --list-devices lists %q, want RPC0 %s and RPC1 %s with memory:\n%s%s", rpcArg, devs, e1.Addr(), e2.Addr(), out, lostSoFar(e1, e2))
	}
	t.Logf("devices: %s | %s", devs[0][0], devs[1][0])

	model := filepath.Join(t.TempDir(), "split.gguf")
	if err := ggufwrite.WriteLlama(model, ggufwrite.LlamaOptions{Width: 64, Blocks: 4, Seed: 7, Name: "split"}); err != nil {
		t.Fatal(err)
	}
	base, logs := startSplitServer(t, llama, model, rpcArg)
	s1, r1 := e1.Bytes()
	s2, r2 := e2.Bytes()
	if s1 == 0 || s2 == 0 || r1 == 0 || r2 == 0 {
		t.Fatalf("bytes over the links after the load: w1 %d/%d, w2 %d/%d sent/received; want both used\n%s", s1, r1, s2, r2, logs)
	}
	t.Logf("model loaded over the links: w1 %d B sent, %d B received; w2 %d B sent, %d B received", s1, r1, s2, r2)

	content := completion(t, base, 16)
	if content == "" {
		t.Fatalf("empty completion\n%s", logs)
	}
	s1b, _ := e1.Bytes()
	s2b, _ := e2.Bytes()
	if s1b == s1 || s2b == s2 {
		t.Fatalf("the completion did not go over both links (w1 %d -> %d, w2 %d -> %d sent)", s1, s1b, s2, s2b)
	}
	t.Logf("completion over both workers: %q", content)

	// A worker that dies mid-request: its End reports it, naming it, and the request ends, within 15 s.
	body, _ := json.Marshal(map[string]any{"prompt": "Once", "n_predict": 3000, "ignore_eos": true, "stream": true})
	req, _ := http.NewRequest("POST", base+"/completion", bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if line, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("stream's first line %q, %v", line, err)
	}
	t0 := time.Now()
	w2.stop()
	select {
	case err := <-e2.Lost():
		if !strings.HasPrefix(err.Error(), "worker w2 ("+w2.addr+"): ") {
			t.Fatalf("Lost: %v, want it to name worker w2", err)
		}
		t.Logf("after %s: %v", time.Since(t0).Round(time.Millisecond), err)
	case <-time.After(15 * time.Second):
		t.Fatal("no error on Lost 15 s after worker w2 stopped")
	}
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, rd); ended <- err }()
	select {
	case err := <-ended:
		t.Logf("the stream ended %s after the worker stopped (%v)", time.Since(t0).Round(time.Millisecond), err)
	case <-time.After(15*time.Second - time.Since(t0)):
		t.Fatalf("the stream still runs 15 s after worker w2 stopped\n%s", logs)
	}
}

// startSplitServer runs llama-server on model with --rpc and every layer offloaded, until the test
// ends, and waits for its /health.
func startSplitServer(t *testing.T, llama, model, rpcArg string) (string, *syncBuf) {
	t.Helper()
	port := testbed.FreePort(t)
	logs := &syncBuf{}
	cmd := exec.Command(llama, "-m", model, "--rpc", rpcArg, "-ngl", "99", "-c", "4096", "-np", "1", "-t", "1",
		"--host", "127.0.0.1", "--port", fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	testbed.WaitFor(t, 120*time.Second, "llama-server --rpc "+rpcArg+" to be ready", func() bool {
		select {
		case <-exited:
			t.Fatalf("llama-server --rpc %s exited before it was ready:\n%s", rpcArg, logs)
		default:
		}
		resp, err := http.Get(base + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base, logs
}

// completion asks for n tokens and returns the text.
func completion(t *testing.T, base string, n int) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"prompt": "Hello", "n_predict": n, "ignore_eos": true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/completion", bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("completion: %v", err)
	}
	defer resp.Body.Close()
	var r struct {
		Content string `json:"content"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("completion: %d, %v", resp.StatusCode, err)
	}
	return r.Content
}

// lostSoFar is what the ends reported, for a failure's message.
func lostSoFar(ends ...*worker.End) string {
	var b strings.Builder
	for _, e := range ends {
		for done := false; !done; {
			select {
			case err := <-e.Lost():
				fmt.Fprintf(&b, "\nlost: %v", err)
			default:
				done = true
			}
		}
	}
	return b.String()
}

// rpcServerProcs are the argv of this process's rpc-servers (Linux: /proc), keyed by pid: its
// children, or its children's children where the worker runs each in a network namespace of its
// own through its shim.
func rpcServerProcs(t *testing.T) map[int][]string {
	t.Helper()
	stat := func(pid string) (ppid int, argv []string) {
		b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
		i := bytes.LastIndexByte(b, ')')
		if err != nil || i < 0 {
			return 0, nil
		}
		var state string // pid (comm) state ppid ...
		if _, err := fmt.Sscan(string(b[i+1:]), &state, &ppid); err != nil {
			return 0, nil
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		return ppid, strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	}
	out := map[int][]string{}
	stats, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range stats {
		ppid, argv := stat(filepath.Base(dir))
		if len(argv) == 0 || !strings.Contains(filepath.Base(argv[0]), "rpc-server") {
			continue
		}
		if ppid != os.Getpid() {
			if gp, _ := stat(strconv.Itoa(ppid)); gp != os.Getpid() {
				continue
			}
		}
		pid, _ := strconv.Atoi(filepath.Base(dir))
		out[pid] = argv
	}
	return out
}

// checkRPCServersLoopbackOnly finds this process's rpc-servers and checks that each was told
// -H 127.0.0.1 and listens, in its own network namespace, on loopback and its port only; and that
// it listens in this process's namespace only where the worker holds it there (not
// worker.IsolationNetns). It reads the rpc-server's own sockets (/proc), so another process's
// listener on the same port number (the head's link end, say) is never taken for it.
func checkRPCServersLoopbackOnly(t *testing.T, want int) {
	t.Helper()
	if runtime.GOOS != "linux" {
		return
	}
	mode, _ := worker.Isolation()
	found := 0
	for pid, argv := range rpcServerProcs(t) {
		found++
		host, port := "", ""
		for i := 0; i+1 < len(argv); i++ {
			switch argv[i] {
			case "-H", "--host":
				host = argv[i+1]
			case "-p", "--port":
				port = argv[i+1]
			}
		}
		p, err := strconv.Atoi(port)
		if host != "127.0.0.1" || err != nil {
			t.Fatalf("rpc-server argv %q, want -H 127.0.0.1 and a port", argv)
		}
		inodes := socketInodes(t, pid)
		own := ownListeners(tcpListeners(t, strconv.Itoa(pid)), inodes)
		if len(own) == 0 {
			t.Fatalf("rpc-server %q listens nowhere", argv)
		}
		for _, l := range own {
			if !l.ip.IsLoopback() || l.port != p {
				t.Fatalf("rpc-server %q listens on %s", argv, net.JoinHostPort(l.ip.String(), strconv.Itoa(l.port)))
			}
		}
		here := ownListeners(tcpListeners(t, "self"), inodes)
		switch {
		case mode == worker.IsolationNetns && len(here) > 0:
			t.Fatalf("rpc-server %q in its own network namespace listens in this one", argv)
		case mode != worker.IsolationNetns && len(here) == 0:
			t.Fatalf("rpc-server %q does not listen on this namespace's loopback", argv)
		}
	}
	if found != want {
		t.Fatalf("%d rpc-server children of this process, want %d", found, want)
	}
}
