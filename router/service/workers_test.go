package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/internal/ggmlrpc"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/wire"
	"github.com/llamatray/llamatray/router/worker"
)

// The test binary doubles as a stand-in for llama.cpp's rpc-server when fakeRPCEnv is set: a TCP
// echo on -H:-p serving one connection at a time, so the worker's links have something behind them.
const fakeRPCEnv = "LLAMATRAY_SERVICE_TEST_FAKE_RPC"

func TestMain(m *testing.M) {
	if os.Getenv(fakeRPCEnv) != "" {
		os.Exit(testbed.EchoRPCServer(os.Args[1:]))
	}
	os.Exit(m.Run())
}

const testWorkerToken = "service-test-token-0123456789-abcdef"

// startTestWorker runs a real worker (worker.Serve) over the fake rpc-server until stop or the
// test's end, and returns its address.
func startTestWorker(t *testing.T) (addr string, stop func()) {
	t.Helper()
	t.Setenv(fakeRPCEnv, "1") // inherited by the rpc-server the worker starts: this binary
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- worker.Serve(ctx, worker.Options{Listen: "127.0.0.1:0", Token: testWorkerToken, RPCServer: os.Args[0],
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Name: "w", Version: "test", Ready: func(a string) { ready <- a }})
	}()
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("worker: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("worker not ready in 30 s")
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return addr, stop
}

func TestWorkerLinks(t *testing.T) {
	addr, stop := startTestWorker(t)
	lost := make(chan string, 4)
	w := newWorkerLinks(slog.New(slog.NewTextHandler(io.Discard, nil)), func() string { return "" }, func(name string, err error) {
		lost <- name + ": " + err.Error()
	})
	t.Cleanup(w.close)
	down := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	<-w.sync(map[string]config.Worker{"a": {Address: addr, Token: testWorkerToken}, "gone": {Address: down, Token: testWorkerToken}})
	byName := func() map[string]wire.WorkerStatus {
		out := map[string]wire.WorkerStatus{}
		for _, s := range w.status(nil) {
			out[s.Name] = s
		}
		return out
	}
	if s := byName(); s["a"].State != wire.WorkerUp || s["a"].End == "" || s["gone"].State != wire.WorkerDown || !strings.Contains(s["gone"].LastError, "worker gone ("+down+")") {
		t.Fatalf("status after the opens: %+v", s)
	}

	ctx := context.Background()
	ends, err := w.Prepare(ctx, []string{"a"})
	if err != nil || len(ends) != 1 || ends[0] != byName()["a"].End {
		t.Fatalf("Prepare(a) = %v, %v; want a's end", ends, err)
	}
	_, err = w.Prepare(ctx, []string{"a", "gone"})
	var we *engine.WorkerError
	if !errors.As(err, &we) || we.Worker != "gone" || !errors.Is(err, worker.ErrUnreachable) {
		t.Fatalf("Prepare(a, gone) = %v, want worker gone unreachable", err)
	}

	// A session open through a's end: a is busy for a load (Prepare), but it answers (Down).
	session, err := net.Dial("tcp", ends[0])
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	if _, err := session.Write(ggmlrpc.Hello()); err != nil { // as llama-server opens its session
		t.Fatal(err)
	}
	testbed.WaitFor(t, 10*time.Second, "a to be busy", func() bool {
		info, err := worker.Check(ctx, addr, testWorkerToken)
		return err == nil && info.Busy
	})
	if _, err := w.Prepare(ctx, []string{"a"}); !errors.Is(err, worker.ErrBusy) || !strings.HasPrefix(err.Error(), "worker a ("+addr+"): worker busy") {
		t.Fatalf("Prepare(a) while busy = %v", err)
	}
	if err := w.Down(ctx, []string{"a"}); err != nil {
		t.Fatalf("Down(a) while busy = %v, want nil: a busy worker answers", err)
	}

	// The worker goes away under the session: the lost link is told, naming it, and a is down.
	stop()
	select {
	case msg := <-lost:
		if !strings.HasPrefix(msg, "a: worker a ("+addr+"): ") {
			t.Fatalf("lost: %q", msg)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no lost link 15 s after the worker stopped")
	}
	if s := byName()["a"]; s.State != wire.WorkerDown {
		t.Fatalf("a after its worker stopped: %+v", s)
	}
	if err := w.Down(ctx, []string{"gone", "a"}); !errors.As(err, &we) || we.Worker != "gone" {
		t.Fatalf("Down(gone, a) = %v, want worker gone", err)
	}

	// A changed section is a new link; a removed one is gone from the status.
	addr2, _ := startTestWorker(t)
	<-w.sync(map[string]config.Worker{"a": {Address: addr2, Token: "wrong-token-0123456789-abcdefghijklmn"}})
	if s := byName(); len(s) != 1 || s["a"].State != wire.WorkerRefused || s["a"].Address != addr2 {
		t.Fatalf("status after the change: %+v", s)
	}
}
