package worker

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// noUsernsEnv makes the test binary run its tests where no user namespace can be made (its own
// user namespace, with user.max_user_namespaces 0 inside), to check that the worker falls back to
// holding its rpc-server's connection there.
const noUsernsEnv = "LLAMATRAY_WORKER_TEST_NO_USERNS"

func init() {
	if os.Getenv(noUsernsEnv) == "" || len(os.Args) < 2 || !strings.HasPrefix(os.Args[1], "-test.") {
		return
	}
	if err := os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0"), 0); err != nil {
		fmt.Println("no user namespaces:", err)
		os.Exit(3)
	}
	if mode, why := Isolation(); mode != IsolationHeld || why == nil {
		fmt.Printf("Isolation() = %s, %v; want %s and why\n", mode, why, IsolationHeld)
		os.Exit(3)
	}
}

// needNetns skips where this machine makes no network namespace for the rpc-server (user
// namespaces off): there the worker holds its connection instead (TestRPCServerServesOnlyTheLink).
func needNetns(t *testing.T) {
	t.Helper()
	if mode, why := Isolation(); mode != IsolationNetns {
		t.Skipf("no network namespace for the rpc-server here (%v)", why)
	}
}

// procField is field n (1-based, after "pid (comm)") of /proc/PID/stat: 1 is the state, 2 the ppid.
func procField(pid, n int) string {
	st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
	if len(f) < n {
		return ""
	}
	return f[n-1]
}

// unreachable checks that every rpc-server started so far is reached by no connection from this
// network namespace, this very process's included: on every port one listens on (its -p), a
// connection to 127.0.0.1 and to this machine's other addresses is refused.
func unreachable(t *testing.T, w *testWorker, when string) {
	t.Helper()
	self, _ := os.Readlink("/proc/self/ns/net")
	for pid, argv := range w.fakeArgv(t) {
		port := argv[slices.Index(argv, "-p")+1]
		addrs := []string{"127.0.0.1"}
		ifs, _ := net.InterfaceAddrs()
		for _, a := range ifs {
			if ip, ok := a.(*net.IPNet); ok && !ip.IP.IsLinkLocalUnicast() {
				addrs = append(addrs, ip.IP.String())
			}
		}
		for _, a := range addrs {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(a, port), time.Second)
			if err == nil {
				c.Close()
				t.Fatalf("%s: a connection to the rpc-server's port %s on %s opened", when, port, a)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("%s: a connection to the rpc-server's port %s on %s: %v, want refused", when, port, a, err)
			}
		}
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); err == nil && ns == self {
			t.Fatalf("%s: the rpc-server (pid %d) is in this process's network namespace %s", when, pid, ns)
		}
	}
}

// TestRPCServerInItsOwnNetworkNamespace: no process outside the rpc-server's network namespace,
// the worker's own included, can connect to it, before, during and after a head's session (after
// which another rpc-server is started, also unreachable), while the head's sessions are carried;
// it runs as this user, without capabilities (not even in its namespace).
func TestRPCServerInItsOwnNetworkNamespace(t *testing.T) {
	needNetns(t)
	w := startWorker(t)
	e := openEnd(t, "gpu1", w.addr)
	unreachable(t, w, "before the session")
	c := dialEnd(t, e)
	echoRound(t, c, "the head's session")
	unreachable(t, w, "during the session")
	echoRound(t, c, "still the head's")
	c.Close()
	c2 := dialEnd(t, e)
	echoRound(t, c2, "the next session")
	if n := len(w.fakeArgv(t)); n != 2 {
		t.Fatalf("%d rpc-servers started, want 2", n)
	}
	unreachable(t, w, "after the session")
	checked := 0
	for pid := range w.fakeArgv(t) {
		st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
		if err != nil {
			continue // the first, killed after its session, may be reaped already
		}
		checked++
		if !strings.Contains(string(st), fmt.Sprintf("\nUid:\t%d\t", os.Getuid())) {
			t.Fatalf("rpc-server %d does not run as this user (uid %d): %s", pid, os.Getuid(), st)
		}
		for _, c := range []string{"CapPrm", "CapEff", "CapAmb"} {
			if !strings.Contains(string(st), "\n"+c+":\t0000000000000000\n") {
				t.Fatalf("rpc-server %d has capabilities (%s): %s", pid, c, st)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no rpc-server left running to check (the second one holds the next session)")
	}
	select {
	case err := <-e.Lost():
		t.Fatalf("Lost: %v", err)
	default:
	}
}

// TestRPCServerNamespaceRefusesAnotherUser: user nobody cannot enter the rpc-server's network
// namespace (nsenter), so it has no way to its port either.
func TestRPCServerNamespaceRefusesAnotherUser(t *testing.T) {
	needNetns(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run a process as another user")
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skip("no nsenter")
	}
	w := startWorker(t)
	for pid := range w.fakeArgv(t) {
		for _, cred := range []*syscall.Credential{{Uid: 65534, Gid: 65534}, nil} {
			cmd := exec.Command(nsenter, "--net=/proc/"+strconv.Itoa(pid)+"/ns/net", "true")
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			out, err := cmd.CombinedOutput()
			if cred != nil && err == nil {
				t.Fatalf("uid 65534 entered the rpc-server's network namespace")
			}
			if cred == nil && err != nil { // root may: the check is not vacuous
				t.Fatalf("root could not enter the rpc-server's network namespace: %v %s", err, out)
			}
		}
	}
}

// TestShimKilledTakesItsRPCServer: the process that runs the rpc-server in its namespace (the
// worker's own binary, argv[0] shimArg0) killed alone takes the rpc-server with it; the session
// is reported lost and the worker starts another for the next.
func TestShimKilledTakesItsRPCServer(t *testing.T) {
	needNetns(t)
	w := startWorker(t)
	e := openEnd(t, "gpu1", w.addr)
	c := dialEnd(t, e)
	echoRound(t, c, "first")
	var rpcPID, shimPID int
	for pid := range w.fakeArgv(t) {
		rpcPID = pid
	}
	shimPID, _ = strconv.Atoi(procField(rpcPID, 2))
	if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", shimPID)); !strings.HasPrefix(string(cmdline), shimArg0+"\x00") {
		t.Fatalf("the rpc-server's parent %d is %q, want the shim", shimPID, cmdline)
	}
	if err := syscall.Kill(shimPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := waitLost(t, e, 15*time.Second); !strings.Contains(err.Error(), "link lost") {
		t.Fatalf("Lost: %v", err)
	}
	// The rpc-server is an external process: poll it, with a deadline.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); ; <-tick.C {
		if st := procField(rpcPID, 1); st == "" || st == "Z" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rpc-server (pid %d) outlived its killed shim by 10 s", rpcPID)
		}
	}
	var c2 net.Conn
	for attempt := 0; ; attempt++ {
		var err error
		if c2, err = dialHello(e.Addr()); err == nil {
			t.Cleanup(func() { c2.Close() })
			break
		}
		if attempt == 3 {
			t.Fatalf("no session after the shim's restart: %v, %v", err, <-e.Lost())
		}
		<-e.Lost()
	}
	echoRound(t, c2, "second")
}

// TestHeldWhereNoNamespace: where no user namespace can be made the worker runs its rpc-server on
// loopback and holds its connection (IsolationHeld), and sessions are carried as before.
func TestHeldWhereNoNamespace(t *testing.T) {
	needNetns(t) // the test's own user namespace
	cmd := exec.Command(os.Args[0], "-test.count=1", "-test.v",
		"-test.run=^(TestRPCServerServesOnlyTheLink|TestRPCServerRestarted|TestEndCarriesBytesBothWays|TestRPCServerInItsOwnNetworkNamespace)$")
	cmd.Env = append(os.Environ(), noUsernsEnv+"=1")
	cmd.SysProcAttr = nsAttr()
	cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWUSER
	cmd.SysProcAttr.Pdeathsig = 0
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tests where no user namespace can be made: %v\n%s", err, out)
	}
	for _, want := range []string{"--- PASS: TestRPCServerRestarted", "--- PASS: TestEndCarriesBytesBothWays", "--- SKIP: TestRPCServerInItsOwnNetworkNamespace"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("no %q in:\n%s", want, out)
		}
	}
}

// TestNoStrangerInTheInstant: a process that watches for each rpc-server's port (from the moment
// the rpc-server is started, before it listens) and dials it over and over, through the worker's
// start and three sessions with a restart after each, never connects: there is no instant, between
// the rpc-server's listen and the worker's connection, in which another process is served.
func TestNoStrangerInTheInstant(t *testing.T) {
	needNetns(t)
	dir := t.TempDir()
	t.Setenv(fakeRPCEnv, dir)
	stop, done := make(chan struct{}), make(chan map[string][2]int)
	go func() {
		tried := map[string][2]int{} // port → dials, connections
		for {
			select {
			case <-stop:
				done <- tried
				return
			default:
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				b, err := os.ReadFile(filepath.Join(dir, e.Name()))
				argv := strings.Split(string(b), "\n")
				i := slices.Index(argv, "-p")
				if err != nil || !strings.HasPrefix(e.Name(), "argv-") || i < 0 || i+1 >= len(argv) {
					continue
				}
				n := tried[argv[i+1]]
				n[0]++
				if c, err := net.DialTimeout("tcp", "127.0.0.1:"+argv[i+1], time.Second); err == nil {
					c.Close()
					n[1]++
				}
				tried[argv[i+1]] = n
			}
		}
	}()
	w := startWorkerIn(t, dir, false)
	e := openEnd(t, "gpu1", w.addr)
	for i := range 3 {
		c := dialEnd(t, e)
		echoRound(t, c, fmt.Sprintf("session %d", i))
		c.Close()
	}
	c := dialEnd(t, e) // the fourth rpc-server is up
	echoRound(t, c, "the last")
	close(stop)
	tried := <-done
	if len(tried) < 4 {
		t.Fatalf("the stranger saw %d rpc-servers' ports, want 4: %v", len(tried), tried)
	}
	for port, n := range tried {
		if n[1] > 0 {
			t.Fatalf("the stranger connected to the rpc-server's port %s %d times (of %d)", port, n[1], n[0])
		}
	}
	t.Logf("the stranger's dials per rpc-server port, all refused: %v", tried)
}
