package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// shortTempDir returns a temporary directory with a path short enough for a unix socket.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestSingleInstance(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "llamatray.sock")
	first, err := claimInstance(path)
	if err != nil {
		t.Fatal(err)
	}
	shown := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan struct{})
	go func() {
		first.serve(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), func() { shown <- struct{}{} })
		close(served)
	}()

	second, err := claimInstance(path)
	if !errors.Is(err, errAlreadyRunning) {
		t.Fatalf("second launch: %v, %v; want errAlreadyRunning", second, err)
	}
	select {
	case <-shown:
	case <-time.After(5 * time.Second):
		t.Fatal("the first instance was not asked to show its window")
	}
	if err := sendCommand(path, "quit-everything"); err == nil {
		t.Error("an unknown command was acknowledged")
	}

	cancel()
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not return after its context ended")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket file left after close: %v", err)
	}
	// Once the first is gone, a new launch becomes the instance.
	third, err := claimInstance(path)
	if err != nil {
		t.Fatalf("launch after the first quit: %v", err)
	}
	third.Close()
}

func TestSingleInstanceTakesOverStaleSocket(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "llamatray.sock")
	// A crashed instance: the socket file exists but nobody accepts.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale socket not on disk: %v", err)
	}
	in, err := claimInstance(path)
	if err != nil {
		t.Fatalf("stale socket not taken over: %v", err)
	}
	in.Close()
}
