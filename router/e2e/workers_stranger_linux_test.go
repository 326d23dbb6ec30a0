package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/worker"
)

// rpcServerPort is the -p of this process's one rpc-server (Linux: /proc).
func rpcServerPort(t *testing.T) string {
	t.Helper()
	procs := rpcServerProcs(t)
	for _, argv := range procs {
		if i := slices.Index(argv, "-p"); len(procs) == 1 && i > 0 && i+1 < len(argv) {
			return argv[i+1]
		}
	}
	t.Fatalf("rpc-servers of this process: %v, want one", procs)
	return ""
}

// strangerAs connects to the rpc-server's port as uid 65534 (bash's /dev/tcp), sends llama.cpp's
// RPC HELLO (protocol 8: command 14, a 24-byte payload) unless idle, says "connected", and then
// prints how many bytes it got back before the connection ended.
func strangerAs(t *testing.T, port string, idle bool) (connected <-chan struct{}, got <-chan string) {
	t.Helper()
	hello := `printf '\016\030\0\0\0\0\0\0\0' >&3; head -c 24 /dev/zero >&3;`
	if idle {
		hello = ""
	}
	cmd := exec.Command("bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/"+port+" || exit 2; "+hello+" echo connected; wc -c <&3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c, g := make(chan struct{}), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() && sc.Text() == "connected" {
			close(c)
		}
		sc.Scan()
		g <- strings.TrimSpace(sc.Text())
	}()
	return c, g
}

// TestRPCServerRefusesOtherUsers: as root, user nobody connects straight to a worker's real
// rpc-server and sends llama.cpp's HELLO. In a network namespace of its own (worker.IsolationNetns)
// the connection is refused, before and after a head's session. Held (elsewhere): it gets no
// answer, and an idle connection of nobody's does not keep a paired head from its session; the
// session's end kills that rpc-server (for a new one on another port), which ends nobody's
// connections without a byte.
func TestRPCServerRefusesOtherUsers(t *testing.T) {
	llama, rpc := rpcServerBin(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	w := startE2EWorker(t, "lent", rpc)
	e := openE2EEnd(t, w)
	port := rpcServerPort(t)
	if mode, _ := worker.Isolation(); mode == worker.IsolationNetns {
		refusedAs(t, port, "before the session")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, llama, "--rpc", e.Addr(), "--list-devices").CombinedOutput()
		if err != nil || !rpcDevice.Match(out) {
			t.Fatalf("the head's session: %v\n%s", err, out)
		}
		if _, err := worker.Check(ctx, w.addr, workerToken); err != nil { // waits for the new rpc-server
			t.Fatalf("Check after the session: %v", err)
		}
		refusedAs(t, rpcServerPort(t), "after the session")
		return
	}
	var got []<-chan string
	for _, idle := range []bool{true, false} {
		connected, g := strangerAs(t, port, idle)
		select {
		case <-connected:
		case <-time.After(30 * time.Second):
			t.Fatal("nobody's connection to the rpc-server did not open")
		}
		got = append(got, g)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, llama, "--rpc", e.Addr(), "--list-devices").CombinedOutput()
	if err != nil || !rpcDevice.Match(out) {
		t.Fatalf("the head's session with strangers at the rpc-server: %v\n%s", err, out)
	}
	for i, g := range got {
		select {
		case n := <-g:
			if n != "0" {
				t.Fatalf("nobody's connection %d got %s bytes from the rpc-server, want 0", i, n)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("nobody's connection %d still open 30 s after the head's session ended", i)
		}
	}
	if _, err := worker.Check(ctx, w.addr, workerToken); err != nil { // waits for the new rpc-server
		t.Fatalf("Check after the session: %v", err)
	}
	if p := rpcServerPort(t); p == port {
		t.Fatalf("the rpc-server still on port %s after the session", p)
	}
}

// refusedAs checks that nobody's connection to the rpc-server's port is refused.
func refusedAs(t *testing.T, port, when string) {
	t.Helper()
	connected, got := strangerAs(t, port, false)
	select {
	case <-got: // closed connected first if it opened
	case <-connected:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: nobody's connection to the rpc-server's port %s neither opened nor failed in 30 s", when, port)
	}
	select {
	case <-connected:
		t.Fatalf("%s: nobody's connection to the rpc-server's port %s opened", when, port)
	default:
	}
}
