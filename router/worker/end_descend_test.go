//go:build linux || windows

package worker

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestEndRefusesOrphans: a process of this user whose parent, a child of this process, has exited
// is no child of this process (Linux: it is reparented; Windows: its parent id names a process that
// is gone) and is refused; a child of this process (as llama-server is) is carried.
func TestEndRefusesOrphans(t *testing.T) {
	w := startWorker(t)
	e := openEnd(t, "gpu1", w.addr)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), orphanDialEnv+"="+e.Addr())
	out, err := cmd.Output() // read to the end: until the orphan exits
	if err != nil || !strings.Contains(string(out), "dial and HELLO") {
		t.Fatalf("an orphaned process of this user: %v %q, want it refused", err, out)
	}
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), echoDialEnv+"="+e.Addr())
	if out, err := child.CombinedOutput(); err != nil || !strings.Contains(string(out), "echoed") {
		t.Fatalf("a child of this process was not carried: %v %s", err, out)
	}
	select {
	case err := <-e.Lost():
		t.Fatalf("Lost: %v", err)
	default:
	}
}
