package e2e

// Discovery on a real network of its own: two network namespaces joined by a veth pair, a real
// Llamatray in each listening on its veth address, and a third on loopback only. Each of the two
// must find the other through mDNS, the loopback one must be announced to no one (while it finds
// both), and an instance added as a peer is no longer offered. Needs root (or, under CI=true,
// passwordless sudo) and iproute2's ip: skipped without them, failed under CI=true.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/wire"
)

// binEnv names, in a run through sudo, the llamatray binary the calling test built (so that the
// run as root builds nothing: no file of root's lands in the user's Go cache).
const binEnv = "LLAMATRAY_DISCOVER_BIN"

// discBin is the llamatray binary: the caller's in a run through sudo, else built once.
func discBin(t *testing.T) string {
	if p := os.Getenv(binEnv); p != "" {
		return p
	}
	return buildLlamatray(t)
}

// needNetns says whether this process can make network namespaces (root, with iproute2's ip).
// Not root under CI=true with passwordless sudo (hosted CI), the test is run again as root through
// sudo and its result is this one's (false: it ran there). Otherwise a test that cannot run is
// skipped, saying why, or failed under CI=true.
func needNetns(t *testing.T) bool {
	t.Helper()
	why := ""
	if _, err := exec.LookPath("ip"); err != nil {
		why = "needs iproute2's ip to make network namespaces (apt-get install iproute2)"
	} else if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" && exec.Command("sudo", "-n", "true").Run() == nil {
			runAsRoot(t)
			return false
		}
		why = "needs root to make network namespaces (run it as root: sudo -E go test ./router/e2e -run " + t.Name() + ")"
	}
	if why == "" {
		return true
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
	return false
}

// runAsRoot runs t's test again in this test binary as root through sudo, with the binaries
// built here and a Go cache of its own, and fails t when it fails.
func runAsRoot(t *testing.T) {
	bin, fake := buildLlamatray(t), testbed.FakeLlamaServer(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sudo", "-n", "env", binEnv+"="+bin, testbed.FakeEnv+"="+fake, "GOCACHE="+t.TempDir(), "CI=true",
		"LLAMA_SERVER="+os.Getenv("LLAMA_SERVER"), "GGML_RPC_SERVER="+os.Getenv("GGML_RPC_SERVER"),
		"PATH="+os.Getenv("PATH"), self, "-test.run", "^"+t.Name()+"$", "-test.v", "-test.count=1")
	var out logWriter
	out.t, out.name = t, "as root"
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s as root (sudo): %v", t.Name(), err)
	}
}

// ipCmd runs ip with args and fails the test on an error.
func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// veth makes namespaces a and b joined by a veth pair, a at addrA and b at addrB (/24), with the
// multicast route mDNS needs; they are deleted when the test ends, failed or not.
func veth(t *testing.T, a, b, addrA, addrB string) {
	t.Helper()
	addNetns(t, a)
	addNetns(t, b)
	ipCmd(t, "link", "add", "lt0", "netns", a, "type", "veth", "peer", "name", "lt1", "netns", b)
	for _, s := range []struct{ ns, dev, addr string }{{a, "lt0", addrA}, {b, "lt1", addrB}} {
		ipCmd(t, "-n", s.ns, "addr", "add", s.addr+"/24", "dev", s.dev)
		ipCmd(t, "-n", s.ns, "link", "set", "lo", "up")
		ipCmd(t, "-n", s.ns, "link", "set", s.dev, "up")
		ipCmd(t, "-n", s.ns, "route", "add", "224.0.0.0/4", "dev", s.dev)
	}
}

// addNetns makes network namespace ns (deleting one left by a killed run first); it is deleted when
// the test ends, failed or not, and with it the interfaces inside. It skips the test when
// namespaces cannot be made here, or fails it under CI=true.
func addNetns(t *testing.T, ns string) {
	t.Helper()
	_ = exec.Command("ip", "netns", "del", ns).Run() // left by a killed run
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		msg := fmt.Sprintf("ip netns add %s: %v\n%s", ns, err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("cannot make network namespaces here: " + msg)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v\n%s", ns, err, out)
		}
	})
}

// dropStaleNetns deletes the namespaces of earlier runs killed before their cleanup ran (their
// test process is gone).
func dropStaleNetns(t *testing.T) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(line, " ")
		var side string
		var pid int
		if n, _ := fmt.Sscanf(name, "lt-disc-%1s-%d", &side, &pid); n != 2 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			t.Logf("deleting namespace %s of an earlier run", name)
			_ = exec.Command("ip", "netns", "del", name).Run()
		}
	}
}

// startIn runs p's serve in network namespace ns (ip netns exec execs it: the pid is the server's).
func (p *proc) startIn(ns string) {
	t := p.t
	t.Helper()
	p.cmd = exec.Command("ip", "netns", "exec", ns, discBin(t), "serve", "--config", filepath.Join(p.dir, "config.toml"))
	p.cmd.Env = p.env
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out logWriter
	out.t, out.name = t, p.name
	p.cmd.Stdout, p.cmd.Stderr = &out, &out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.done = make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill)
}

// logWriter logs a process's output, a line at a time.
type logWriter struct {
	t    *testing.T
	name string
	buf  []byte
}

func (w *logWriter) Write(b []byte) (int, error) {
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		w.t.Logf("%s: %s", w.name, w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

// cli runs the llamatray command in ns against p (its config names its address and key).
func (p *proc) nsCLI(ns string, args ...string) ([]byte, error) {
	args = append(append([]string{"netns", "exec", ns, discBin(p.t)}, args...), "--config", filepath.Join(p.dir, "config.toml"))
	cmd := exec.Command("ip", args...)
	cmd.Env = p.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%w: %s", err, stderr.Bytes())
	}
	return out, nil
}

// discovered is p's `llamatray peer discover --json`, run in ns.
func (p *proc) discovered(ns string) (wire.DiscoveredList, error) {
	var l wire.DiscoveredList
	out, err := p.nsCLI(ns, "peer", "discover", "--json")
	if err != nil {
		return l, err
	}
	if err := json.Unmarshal(out, &l); err != nil {
		return l, fmt.Errorf("peer discover --json: %w: %s", err, out)
	}
	return l, nil
}

// urls are l's URLs.
func urls(l wire.DiscoveredList) []string {
	var out []string
	for _, d := range l.Discovered {
		out = append(out, d.URL)
	}
	return out
}

// pollUntil asks until cond holds, every half second (an external process's state), failing at
// the deadline with the last answer.
func pollUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	if !testbed.Poll(context.Background(), timeout, 500*time.Millisecond, func() (ok bool) { ok, last = cond(); return ok }) {
		t.Fatalf("%s: not within %v; last: %s", what, timeout, last)
	}
}

func TestDiscoverNetns(t *testing.T) {
	if !needNetns(t) {
		return
	}
	id := os.Getpid()
	dropStaleNetns(t)
	nsA, nsB := fmt.Sprintf("lt-disc-a-%d", id), fmt.Sprintf("lt-disc-b-%d", id)
	const addrA, addrB = "10.231.0.1", "10.231.0.2"
	veth(t, nsA, nsB, addrA, addrB)

	onVeth := func(name, addr string) *proc {
		return newProc(t, name, 18080, nil, nil, func(c *config.Config) {
			c.Listen = addr + ":18080"
			c.APIKeys = []string{"key-" + name}
		})
	}
	a, b := onVeth("a", addrA), onVeth("b", addrB)
	loop := newProc(t, "loop", 18081, nil, nil, nil) // 127.0.0.1:18081, advertise on (the default)
	a.startIn(nsA)
	b.startIn(nsB)
	loop.startIn(nsA)

	wantA, wantB := "http://"+addrA+":18080", "http://"+addrB+":18080"
	// Each finds the other, and only the other: never itself, never the loopback instance.
	for _, c := range []struct {
		p     *proc
		ns    string
		other string
	}{{a, nsA, wantB}, {b, nsB, wantA}} {
		pollUntil(t, 60*time.Second, c.p.name+" to discover "+c.other, func() (bool, string) {
			l, err := c.p.discovered(c.ns)
			if err != nil {
				return false, err.Error()
			}
			got := urls(l)
			for _, u := range got {
				if u != c.other {
					t.Fatalf("%s discovered %s (all: %v); want only %s", c.p.name, u, got, c.other)
				}
			}
			if !l.Enabled {
				t.Fatalf("%s: discovery off: %+v", c.p.name, l)
			}
			return len(got) == 1, fmt.Sprintf("%+v", l)
		})
	}
	// The loopback instance browses too: it finds both, so it runs and answers mDNS itself.
	pollUntil(t, 60*time.Second, "the loopback instance to discover both", func() (bool, string) {
		l, err := loop.discovered(nsA)
		if err != nil {
			return false, err.Error()
		}
		got := strings.Join(urls(l), " ")
		return got == wantA+" "+wantB || got == wantB+" "+wantA, fmt.Sprintf("%+v", l)
	})
	l, _ := b.discovered(nsB)
	if d := l.Discovered[0]; d.Instance == "" || d.Version != "dev" || d.Name == "" || d.LastSeen.IsZero() {
		t.Errorf("b's entry of a: %+v; want an instance name, version dev, a peer name and a time", d)
	}
	// Looks made since the loopback one is up still find only the other (two refreshes apart).
	for _, c := range []struct {
		p     *proc
		ns    string
		other string
	}{{a, nsA, wantB}, {b, nsB, wantA}} {
		start := time.Now()
		pollUntil(t, 30*time.Second, c.p.name+" to look again", func() (bool, string) {
			l, err := c.p.discovered(c.ns)
			if err != nil {
				return false, err.Error()
			}
			if got := urls(l); len(got) != 1 || got[0] != c.other {
				t.Fatalf("%s discovered %v; want only %s (the loopback instance is announced to no one)", c.p.name, got, c.other)
			}
			return time.Since(start) > 2*(5*time.Second+2*time.Second), ""
		})
	}

	// Added as a peer (the user's choice), b is no longer offered to a; a lists b's models then.
	if out, err := a.nsCLI(nsA, "peer", "add", wantB, "--name", "b", "--api-key", "key-b"); err != nil {
		t.Fatalf("peer add: %v %s", err, out)
	}
	l, err := a.discovered(nsA)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Discovered) != 0 {
		t.Errorf("a still offers %v after b was added", urls(l))
	}
	pollUntil(t, 30*time.Second, "a to read peer b", func() (bool, string) {
		out, err := a.nsCLI(nsA, "peer", "list", "--json")
		if err != nil {
			return false, err.Error()
		}
		var ps []wire.Peer
		if err := json.Unmarshal(out, &ps); err != nil {
			return false, string(out)
		}
		return len(ps) == 1 && ps[0].Name == "b" && ps[0].State == "up", string(out)
	})
}
