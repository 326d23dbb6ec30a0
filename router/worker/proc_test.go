//go:build linux

package worker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWorkerProcessKilled: a worker process killed by SIGKILL mid-session takes its rpc-server with
// it (Pdeathsig), and the head's end reports the loss, naming the worker, within 15 s (the time is logged).
func TestWorkerProcessKilled(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerProcEnv+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	// The worker is an external process: poll for its address file, with a deadline.
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == ""; {
		if b, err := os.ReadFile(filepath.Join(dir, "addr")); err == nil {
			addr = string(b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker process did not listen in 30 s")
		}
		select {
		case <-exited:
			t.Fatal("the worker process exited")
		case <-time.After(20 * time.Millisecond):
		}
	}
	w := &testWorker{dir: dir}
	var rpcPID int
	for pid := range w.fakeArgv(t) {
		rpcPID = pid
	}
	e := openEnd(t, "gpu1", addr)
	c := dialEnd(t, e)
	echoRound(t, c, "before")

	t0 := time.Now()
	cmd.Process.Kill()
	err := waitLost(t, e, 15*time.Second) // the bound a worker's loss is reported in
	t.Logf("Lost %s after the kill", time.Since(t0).Round(time.Millisecond))
	if !strings.HasPrefix(err.Error(), "worker gpu1 ("+addr+"): link lost") {
		t.Fatalf("Lost: %v", err)
	}
	waitEOF(t, c, 5*time.Second)
	// The rpc-server died with its worker: poll the external process, with a deadline.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); ; <-tick.C {
		if err := syscall.Kill(rpcPID, 0); err != nil {
			break
		}
		if st, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(rpcPID), "stat")); strings.Contains(string(st), ") Z ") {
			break // a zombie waiting for init to reap it is dead
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rpc-server (pid %d) outlived its killed worker by 10 s", rpcPID)
		}
	}
}
