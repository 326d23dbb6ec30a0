package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/envconfig"
	"github.com/llamatray/llamatray/router/testbed"
)

// serveArgsEnv makes the test binary run `Main(args)` (a JSON list) instead of the tests, so that a
// test can measure a real serve process from outside.
const serveArgsEnv = "LLAMATRAY_TEST_SERVE_ARGS"

func TestMain(m *testing.M) {
	if v := os.Getenv(serveArgsEnv); v != "" {
		var args []string
		if err := json.Unmarshal([]byte(v), &args); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", serveArgsEnv, err)
			os.Exit(2)
		}
		os.Exit(Main(args, Build{}, nil))
	}
	os.Exit(m.Run())
}

// lockedBuffer collects a child's output, written by exec's copying goroutine.
type lockedBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startServeProcess runs `llamatray serve` as a separate process (this test binary, see TestMain)
// with env added, waits until it answers, and stops it when the test ends. It returns its address
// and pid.
func startServeProcess(t *testing.T, env ...string) (string, int) {
	t.Helper()
	isolate(t)
	addr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	args, _ := json.Marshal([]string{"serve", "--addr", addr, "--models-dir", t.TempDir(), "--llama-server", testbed.FakeLlamaServer(t), "--log-level", "warn"})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), serveArgsEnv+"="+string(args)), env...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("serve's output:\n%s", out.String())
		}
	})
	testbed.WaitFor(t, 30*time.Second, "serve to answer", func() bool {
		resp, err := http.Get("http://" + addr + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return addr, cmd.Process.Pid
}

// rssKiB is a process's resident set (VmRSS) in KiB.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	kb, err := readRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	return kb
}

// readRSS reads VmRSS, in KiB, from /proc/PID/status.
func readRSS(pid int) (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				return 0, fmt.Errorf("parse %q: %w", line, err)
			}
			return kb, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// openFiles counts a process's open file descriptors.
func openFiles(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("read /proc/%d/fd: %v", pid, err)
	}
	return len(fds)
}

// A real serve process holds neither the memory that bodies merely declare nor the connections of
// bodies that never come, nor idle keep-alive connections: rounds of connections declaring 64 MiB
// and sending 1 byte are cut after the body timeout without the RSS growing by their declared
// sizes, and idle connections are closed after the idle timeout.
func TestServeProcessBodyAndIdleLimits(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// The idle timeout leaves the 300 connections below time to be opened one after another on a
	// loaded machine; those answered within half of it are certainly still held when counted.
	const bodyTimeout, idleTimeout = time.Second, 5 * time.Second
	addr, pid := startServeProcess(t, string(envconfig.BodyTimeout)+"="+bodyTimeout.String(), string(envconfig.IdleTimeout)+"="+idleTimeout.String())
	baseRSS, baseFDs := rssKiB(t, pid), openFiles(t, pid)

	// (a) Bodies declared 64 MiB of which 1 byte comes, 3 rounds of 40 connections.
	var peak atomic.Int64
	peak.Store(int64(baseRSS))
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the RSS is sampled all along, not only between rounds
		defer close(sampled)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if kb, err := readRSS(pid); err == nil && int64(kb) > peak.Load() {
				peak.Store(int64(kb))
			}
		}
	}()
	const rounds, conns = 3, 40
	for round := range rounds {
		start := time.Now()
		answers := make([]string, conns)
		errs := make([]error, conns)
		var wg sync.WaitGroup
		for i := range conns {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * bodyTimeout))
			if _, err := fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", addr, 64<<20); err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() { // the answer, then the server's close
				defer wg.Done()
				b, err := io.ReadAll(conn)
				answers[i], errs[i] = string(b), err
			}()
		}
		wg.Wait()
		took := time.Since(start)
		for i := range conns {
			if errs[i] != nil || !strings.HasPrefix(answers[i], "HTTP/1.1 408 ") || !strings.Contains(answers[i], "body_timeout") {
				t.Fatalf("round %d, connection %d: %q, %v (want a 408 and the server's close); RSS %d MiB", round, i, answers[i], errs[i], rssKiB(t, pid)>>10)
			}
		}
		if took < bodyTimeout {
			t.Fatalf("round %d: cut after %s, before the body timeout", round, took)
		}
		t.Logf("round %d: %d connections cut after %s, RSS %d MiB", round, conns, took.Round(time.Millisecond), rssKiB(t, pid)>>10)
	}
	close(stop)
	<-sampled
	afterRSS := rssKiB(t, pid)
	peak.Store(max(peak.Load(), int64(afterRSS)))
	t.Logf("RSS: %d MiB before, %d MiB at most during, %d MiB after %d×%d bodies declared 64 MiB", baseRSS>>10, peak.Load()>>10, afterRSS>>10, rounds, conns)
	if limit := int64(baseRSS + 256<<10); peak.Load() > limit {
		t.Fatalf("RSS reached %d MiB, more than %d MiB (the baseline + 256 MiB)", peak.Load()>>10, limit>>10)
	}

	// (b) Idle keep-alive connections after one request each.
	const idle = 300
	idleConns := make([]net.Conn, idle)
	readers := make([]*bufio.Reader, idle)
	answered := make([]time.Time, idle)
	for i := range idle {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		fmt.Fprintf(conn, "GET /health HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("idle connection %d: %d, close %v", i, resp.StatusCode, resp.Close)
		}
		idleConns[i], readers[i], answered[i] = conn, br, time.Now()
	}
	// The server may close a connection once it has been idle for idleTimeout, counted from a
	// moment before the client read the answer: those answered less than half of it ago are open.
	counted := time.Now()
	recent := 0
	for _, at := range answered {
		if counted.Sub(at) < idleTimeout/2 {
			recent++
		}
	}
	held := openFiles(t, pid)
	if recent < idle/10 {
		t.Fatalf("only %d of %d connections opened within %s: the machine is too slow to check that they are held", recent, idle, idleTimeout/2)
	}
	if held < baseFDs+recent*9/10 { // the baseline's own descriptors come and go by a few
		t.Fatalf("%d open files with %d connections idle for less than %s (baseline %d): the connections are not held", held, recent, idleTimeout/2, baseFDs)
	}
	start := time.Now()
	testbed.WaitFor(t, 10*idleTimeout, "the idle connections to be closed", func() bool { return openFiles(t, pid) <= baseFDs+5 })
	closed := time.Since(start)
	for i, br := range readers {
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("idle connection %d: %v, want the server's close", i, err)
		}
	}
	t.Logf("open files: %d before, %d with %d idle connections (%d of them opened in the last %s), %d after %s", baseFDs, held, idle, recent, idleTimeout/2, openFiles(t, pid), closed.Round(time.Millisecond))
}
