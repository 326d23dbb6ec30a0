package service

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/internal/ggmlrpc"
	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/worker"
)

// TestWorkerPrepareRightAfterSessionClosed: the next load's Prepare checks the worker while the
// session of the model's child that just stopped is still open there (the worker ends it a moment
// after the child closed its connection); Prepare waits for it instead of failing the load as busy.
func TestWorkerPrepareRightAfterSessionClosed(t *testing.T) {
	addr, _ := startTestWorker(t)
	w := newWorkerLinks(slog.New(slog.NewTextHandler(io.Discard, nil)), func() string { return "" }, func(string, error) {})
	t.Cleanup(w.close)
	<-w.sync(map[string]config.Worker{"a": {Address: addr, Token: testWorkerToken}})
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
	checkWorker = func(ctx context.Context, address, token string) (worker.Info, error) {
		info, err := worker.Check(ctx, address, token)
		if err == nil && info.Busy {
			once.Do(func() { close(sawBusy) })
		}
		return info, err
	}
	t.Cleanup(func() { checkWorker = worker.Check })
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

// TestWorkerDevicesLies: a worker's listed devices are what its rpc-server told; a device that
// claims more free memory than it has, or petabytes, is left out, and its description is cleaned.
func TestWorkerDevicesLies(t *testing.T) {
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
