package child

import (
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
)

// TestProcessLines: a Process's stdout and stderr reach onLine as lines, in order, its last line
// too when it has no newline; Tail keeps the last of them.
func TestProcessLines(t *testing.T) {
	var mu sync.Mutex // guards got
	var got []string
	p, err := StartProcess(exec.Command("sh", "-c", "echo one; echo two >&2; printf three"), testLogger(t), 2,
		func(l string) { mu.Lock(); got = append(got, l); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Err(); err != nil {
		t.Fatalf("Err = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"one", "two", "three"}; !slices.Equal(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	if tail := p.Tail(); tail != "two | three" {
		t.Fatalf("Tail = %q", tail)
	}
}

// TestProcessKillTakesItsGroup: Kill ends what the process started too, not only the process.
func TestProcessKillTakesItsGroup(t *testing.T) {
	pids := make(chan int, 1)
	p, err := StartProcess(exec.Command("sh", "-c", "sleep 300 & echo $!; wait"), testLogger(t), 10,
		func(l string) {
			if pid, err := strconv.Atoi(l); err == nil {
				pids <- pid
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	select {
	case pid = <-pids:
	case <-time.After(30 * time.Second):
		p.Kill()
		t.Fatalf("no pid printed: %s", p.Tail())
	}
	t.Cleanup(func() {
		if !gone(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if gone(pid) {
		t.Fatalf("sleep (pid %d) not running before the kill", pid)
	}
	p.Kill()
	<-p.Done()
	if p.Err() == nil {
		t.Fatal("a killed process ended without an error")
	}
	testbed.WaitFor(t, 10*time.Second, "the process's own child to die with it", func() bool { return gone(pid) })
	p.Kill() // reaped: nothing more
}

// TestProcessStartFails: a binary that cannot start is StartProcess's error.
func TestProcessStartFails(t *testing.T) {
	if _, err := StartProcess(exec.Command("/nonexistent/rpc-server"), discardLogger(), 10, func(string) {}); err == nil {
		t.Fatal("StartProcess of a missing binary succeeded")
	}
}
