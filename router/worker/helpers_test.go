package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
)

// The test binary doubles as a fake rpc-server (a TCP echo serving one connection at a time, as
// llama.cpp's does) when fakeRPCEnv names a folder: it writes its argv and pid there.
const fakeRPCEnv = "LLAMATRAY_WORKER_TEST_FAKE_RPC"

func TestMain(m *testing.M) {
	// As the rpc-server, argv is the worker's "-H 127.0.0.1 ..." (the fuzzing engine's own
	// processes inherit the environment, not those arguments).
	if dir := os.Getenv(fakeRPCEnv); dir != "" && len(os.Args) > 1 && os.Args[1] == "-H" {
		os.Exit(fakeRPC(dir, os.Args[1:]))
	}
	if dir := os.Getenv(workerProcEnv); dir != "" {
		os.Exit(workerProc(dir))
	}
	if addr := os.Getenv(echoDialEnv); addr != "" {
		os.Exit(echoDial(addr))
	}
	if addr := os.Getenv(orphanDialEnv); addr != "" {
		os.Exit(orphanDial(addr))
	}
	os.Exit(m.Run())
}

// fakeRPC is the rpc-server the tests' workers start: testbed's echo, which first records its
// command line in dir, and fails when dir has a file "fail".
func fakeRPC(dir string, args []string) int {
	if _, err := os.Stat(filepath.Join(dir, "fail")); err == nil {
		fmt.Println("fake rpc-server: told to fail")
		return 3
	}
	// Written whole, then renamed, as the worker's address is: fakeArgv never reads half of it.
	tmp := filepath.Join(dir, fmt.Sprintf(".tmp-%d", os.Getpid()))
	if os.WriteFile(tmp, []byte(strings.Join(os.Args, "\n")), 0o644) == nil {
		os.Rename(tmp, filepath.Join(dir, fmt.Sprintf("argv-%d", os.Getpid())))
	}
	return testbed.EchoRPCServer(args)
}

// workerProcEnv makes the test binary a worker process (Serve with the fake rpc-server), which
// writes its link address to addr in that folder.
const workerProcEnv = "LLAMATRAY_WORKER_TEST_PROC"

func workerProc(dir string) int {
	os.Setenv(fakeRPCEnv, dir)
	err := Serve(context.Background(), Options{Listen: "127.0.0.1:0", Token: testToken, RPCServer: os.Args[0],
		Ready: func(a string) {
			// Written whole, then renamed: the test polling for the file never reads it empty.
			tmp := filepath.Join(dir, "addr.tmp")
			if os.WriteFile(tmp, []byte(a), 0o644) == nil {
				os.Rename(tmp, filepath.Join(dir, "addr"))
			}
		}})
	fmt.Println(err)
	return 1
}

// echoDialEnv makes the test binary a client that dials that address, sends a line and says
// whether it came back (exit 0) or the connection was closed (exit 1).
const echoDialEnv = "LLAMATRAY_WORKER_TEST_ECHO_DIAL"

func echoDial(addr string) int {
	if os.Getenv(orphanDialEnv+"_CHILD") != "" {
		io.Copy(io.Discard, os.Stdin) // until orphanDial, its parent, has exited
	}
	c, err := dialHello(addr)
	if err != nil {
		fmt.Println("dial and HELLO:", err)
		return 1
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := "hello from another process\n"
	if _, err := c.Write([]byte(msg)); err != nil {
		fmt.Println("write:", err)
		return 1
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
		fmt.Printf("read back: %q %v\n", got, err)
		return 1
	}
	fmt.Println("echoed")
	return 0
}

// orphanDialEnv makes the test binary start an echoDial client and exit without waiting for it:
// the client dials once this process (its parent) has exited, its stdin's writer with it.
const orphanDialEnv = "LLAMATRAY_WORKER_TEST_ORPHAN_DIAL"

func orphanDial(addr string) int {
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), orphanDialEnv+"=", orphanDialEnv+"_CHILD=1", echoDialEnv+"="+addr)
	cmd.Stdin, cmd.Stdout = r, os.Stdout
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return 1
	}
	_ = w // held open until this process exits
	return 0
}

const testToken = "test-token-0123456789-abcdefghijklmn"

type testWorker struct {
	addr   string
	dir    string // the fake rpc-server's folder
	cancel context.CancelFunc
	done   chan error
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startWorker runs Serve with the fake rpc-server on a free loopback port, until the test ends.
func startWorker(t testing.TB) *testWorker {
	t.Helper()
	return startWorkerHeld(t, false)
}

// startWorkerHeld is startWorker, with held: the rpc-server on this machine's loopback, as where
// no network namespace can be made (IsolationHeld).
func startWorkerHeld(t testing.TB, held bool) *testWorker {
	t.Helper()
	dir := t.TempDir()
	t.Setenv(fakeRPCEnv, dir)
	return startWorkerIn(t, dir, held)
}

// startWorkerIn is startWorkerHeld, its fake rpc-servers' folder dir (fakeRPCEnv, set by the caller).
func startWorkerIn(t testing.TB, dir string, held bool) *testWorker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &testWorker{dir: dir, cancel: cancel, done: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		w.done <- Serve(ctx, Options{Listen: "127.0.0.1:0", Token: testToken, RPCServer: os.Args[0],
			Threads: 2, Logger: quiet(), Name: "w1", Version: "test", Ready: func(a string) { ready <- a }, held: held})
	}()
	select {
	case w.addr = <-ready:
	case err := <-w.done:
		t.Fatalf("Serve: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("worker not ready in 30 s")
	}
	t.Cleanup(func() { w.stop(t) })
	return w
}

// stop ends Serve and checks it returned nil.
func (w *testWorker) stop(t testing.TB) {
	w.cancel()
	select {
	case err, ok := <-w.done:
		if ok && err != nil {
			t.Errorf("Serve returned %v", err)
		}
		if ok {
			close(w.done)
		}
	case <-time.After(15 * time.Second):
		t.Error("Serve did not return 15 s after its context ended")
	}
}

// fakePIDs are the pids of the fake rpc-servers started so far, from their argv files.
func (w *testWorker) fakeArgv(t testing.TB) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	ents, _ := os.ReadDir(w.dir)
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "argv-%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(w.dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[pid] = strings.Split(string(b), "\n")
	}
	return out
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// echoRound writes msg to c and reads it back.
func echoRound(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read back: %v", err)
	}
	if string(got) != msg {
		t.Fatalf("echo: got %q, want %q", got, msg)
	}
	c.SetDeadline(time.Time{})
}

// waitLost waits for an error on e.Lost.
func waitLost(t *testing.T, e *End, within time.Duration) error {
	t.Helper()
	select {
	case err := <-e.Lost():
		return err
	case <-time.After(within):
		t.Fatalf("no error on Lost within %s", within)
		return nil
	}
}

// waitEOF waits for c to be closed by the other side.
func waitEOF(t *testing.T, c net.Conn, within time.Duration) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection not closed within %s", within)
	}
}
