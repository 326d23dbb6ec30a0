package worker

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// echoFrom runs the test binary as a client of addr (echoDial) with uid (nil: this process's).
func echoFrom(t *testing.T, bin, addr string, cred *syscall.Credential) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), echoDialEnv+"="+addr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("run %s: %v", bin, err)
	}
	return 0, string(out)
}

func TestEndRefusesAnotherUsersProcess(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	// A copy of the test binary that user nobody may run.
	dir, err := os.MkdirTemp("", "worker-uid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "worker.test")
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(dst, src)
	src.Close()
	if cerr := dst.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}

	w := startWorker(t)
	e := openEnd(t, "gpu1", w.addr)
	if code, out := echoFrom(t, bin, e.Addr(), &syscall.Credential{Uid: 65534, Gid: 65534}); code != 1 {
		t.Fatalf("a process of uid 65534 got through the End (exit %d): %s", code, out)
	}
	if code, out := echoFrom(t, bin, e.Addr(), nil); code != 0 {
		t.Fatalf("this user's process was not carried (exit %d): %s", code, out)
	}
	// The refusal is no lost link (it would have been sent before the refused client saw its
	// connection closed).
	select {
	case err := <-e.Lost():
		t.Fatalf("Lost after a refused local connection: %v", err)
	default:
	}
}

// TestEndRefusesThisUsersOtherProcesses: a process of this very user that is not one of this
// process's children (llama-server is) is refused, and the model's open link goes on.
func TestEndRefusesThisUsersOtherProcesses(t *testing.T) {
	w := startWorker(t)
	relay, dials := countingRelay(t, w.addr)
	e := openEnd(t, "gpu1", relay)
	c := dialEnd(t, e)
	echoRound(t, c, "the model's link")
	before := dials.Load()
	// sh starts the client and exits: its parent is sh, not this process. Its output is read to
	// the end, that is until the client exits.
	cmd := exec.Command("sh", "-c", `"$0" -test.run='^$' &`, os.Args[0])
	cmd.Env = append(os.Environ(), echoDialEnv+"="+e.Addr())
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "dial and HELLO") {
		t.Fatalf("another process of this user: %v %q, want it refused", err, out)
	}
	if n := dials.Load(); n != before {
		t.Fatalf("the End dialed the worker %d times for another process", n-before)
	}
	// A child of this process is carried (as llama-server is), when the model's link is done.
	c.Close()
	if code, out := echoFrom(t, os.Args[0], e.Addr(), nil); code != 0 {
		t.Fatalf("a child of this process was not carried (exit %d): %s", code, out)
	}
	select {
	case err := <-e.Lost():
		t.Fatalf("Lost: %v", err)
	default:
	}
}
