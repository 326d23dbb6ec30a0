package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/internal/ggmlrpc"
	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/wire"
)

func TestLinks(t *testing.T) {
	tw := startWorker(t)
	addr := tw.addr
	lost := make(chan string, 4)
	w := NewLinks(quiet(), func() string { return "" }, func(name string, err error) {
		lost <- name + ": " + err.Error()
	})
	t.Cleanup(w.Close)
	down := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	<-w.Sync(map[string]config.Worker{"a": {Address: addr, Token: testToken}, "gone": {Address: down, Token: testToken}})
	byName := func() map[string]wire.WorkerStatus {
		out := map[string]wire.WorkerStatus{}
		for _, s := range w.Status(nil) {
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
	if !errors.As(err, &we) || we.Worker != "gone" || !errors.Is(err, ErrUnreachable) {
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
		info, err := Check(ctx, addr, testToken)
		return err == nil && info.Busy
	})
	if _, err := w.Prepare(ctx, []string{"a"}); !errors.Is(err, ErrBusy) || !strings.HasPrefix(err.Error(), "worker a ("+addr+"): worker busy") {
		t.Fatalf("Prepare(a) while busy = %v", err)
	}
	if err := w.Down(ctx, []string{"a"}); err != nil {
		t.Fatalf("Down(a) while busy = %v, want nil: a busy worker answers", err)
	}

	// The worker goes away under the session: the lost link is told, naming it, and a is down.
	tw.stop(t)
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
	addr2 := startWorkerIn(t, tw.dir, false).addr
	<-w.Sync(map[string]config.Worker{"a": {Address: addr2, Token: "wrong-token-0123456789-abcdefghijklmn"}})
	if s := byName(); len(s) != 1 || s["a"].State != wire.WorkerRefused || s["a"].Address != addr2 {
		t.Fatalf("status after the change: %+v", s)
	}
}

// TestLinksPrepareRightAfterSessionClosed: the next load's Prepare checks the worker while the
// session of the model's child that just stopped is still open there (the worker ends it a moment
// after the child closed its connection); Prepare waits for it instead of failing the load as busy.
func TestLinksPrepareRightAfterSessionClosed(t *testing.T) {
	addr := startWorker(t).addr
	w := NewLinks(quiet(), func() string { return "" }, func(string, error) {})
	t.Cleanup(w.Close)
	<-w.Sync(map[string]config.Worker{"a": {Address: addr, Token: testToken}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := w.Prepare(ctx, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	session, err := net.Dial("tcp", ends[0])
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	session.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := session.Write(ggmlrpc.Hello()); err != nil { // as llama-server opens its session
		t.Fatal(err)
	}
	if _, err := ggmlrpc.ReadAnswer(session); err != nil {
		t.Fatalf("HELLO: %v", err)
	}
	msg := []byte("GRAPH_COMPUTE")
	if _, err := session.Write(msg); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(session, msg); err != nil {
		t.Fatalf("echo: %v", err)
	}

	// The session closes once Prepare's check has seen it busy.
	sawBusy := make(chan struct{})
	var once sync.Once
	w.check = func(ctx context.Context, address, token string) (Info, error) {
		info, err := Check(ctx, address, token)
		if err == nil && info.Busy {
			once.Do(func() { close(sawBusy) })
		}
		return info, err
	}
	done := make(chan error, 1)
	go func() { _, err := w.Prepare(ctx, []string{"a"}); done <- err }()
	select {
	case <-sawBusy:
	case err := <-done:
		t.Fatalf("Prepare returned before it saw the open session: %v", err)
	}
	session.Close()
	if err := <-done; err != nil {
		t.Fatalf("Prepare as the previous session closes: %v", err)
	}
}

// TestLinksDevicesLies: a worker's listed devices are what its rpc-server told; a device that
// claims more free memory than it has, or petabytes, is left out, and its description is cleaned.
func TestLinksDevicesLies(t *testing.T) {
	out := mem.ParseListDevices([]byte("Available devices:\n" +
		"  RPC0: RPC[127.0.0.1:5000] (8000 MiB, 7000 MiB free)\n" +
		"  RPC1: RPC[127.0.0.1:5000] (8000 MiB, 9000 MiB free)\n" +
		"  RPC2: RPC[127.0.0.1:5000] (99999999999 MiB, 99999999999 MiB free)\n" +
		"  RPC3: RPC[127.0.0.1:5000]\x1b[2J\u202e (100 MiB, 50 MiB free)\n"))
	got := workerDevices(out, "127.0.0.1:5000")
	if len(got) != 2 || got[0].Name != "RPC0" || got[1].Name != "RPC3" || strings.ContainsAny(got[1].Description, "\x1b\u202e") {
		t.Fatalf("workerDevices = %+v, want RPC0 and RPC3 (cleaned)", got)
	}
}
