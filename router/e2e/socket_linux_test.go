package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With Llamatray serving, no child has a TCP listening socket: each listens on a unix socket in a
// per-run folder of mode 0700 under $XDG_RUNTIME_DIR, which is gone once Llamatray stopped.
func TestChildrenListenOnUnixSocketsOnly(t *testing.T) {
	runtimeDir, err := os.MkdirTemp("", "rt") // short: socket paths must fit a socket address
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Registered before start's cleanup, so this runs after Llamatray stopped.
		left, _ := filepath.Glob(filepath.Join(runtimeDir, "llamatray-*"))
		os.RemoveAll(runtimeDir)
		if len(left) != 0 {
			t.Errorf("socket folders left after stop: %v", left)
		}
	})
	t.Setenv("XDG_RUNTIME_DIR", runtimeDir)
	in := start(t, []string{"alpha", "beta"}, nil)
	for _, m := range []string{"alpha", "beta"} {
		if code, body, err := in.chat(t.Context(), m, true, 4); err != nil || code != 200 {
			t.Fatalf("%s: %d %v %s", m, code, err, body)
		}
	}
	listening := tcpListenInodes(t)
	for _, m := range []string{"alpha", "beta"} {
		st := in.state(m)
		if st.PID == 0 || st.Port != 0 || st.Socket == "" {
			t.Fatalf("%s: pid %d port %d socket %q", m, st.PID, st.Port, st.Socket)
		}
		dir := filepath.Dir(st.Socket)
		if filepath.Dir(dir) != runtimeDir || !strings.HasPrefix(filepath.Base(dir), "llamatray-") {
			t.Fatalf("%s: socket %s not in a llamatray folder of %s", m, st.Socket, runtimeDir)
		}
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("socket folder %s: %v %v", dir, fi.Mode(), err)
		}
		if fi, err := os.Stat(st.Socket); err != nil || fi.Mode()&os.ModeSocket == 0 {
			t.Fatalf("%s: %s is not a socket: %v", m, st.Socket, err)
		}
		sockets := 0
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", st.PID))
		if err != nil {
			t.Fatal(err)
		}
		for _, fd := range fds {
			target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", st.PID, fd.Name()))
			inode, ok := strings.CutPrefix(target, "socket:[")
			if err != nil || !ok {
				continue
			}
			sockets++
			if listening[strings.TrimSuffix(inode, "]")] {
				t.Fatalf("%s (pid %d) has a TCP listening socket (fd %s)", m, st.PID, fd.Name())
			}
		}
		if sockets == 0 {
			t.Fatalf("%s (pid %d): no socket among its fds", m, st.PID)
		}
	}
}

// tcpListenInodes returns the inodes of every TCP socket in the LISTEN state (IPv4 and IPv6).
func tcpListenInodes(t *testing.T) map[string]bool {
	t.Helper()
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) >= 10 && fields[3] == "0A" { // st: 0A is TCP_LISTEN
				inodes[fields[9]] = true
			}
		}
	}
	if len(inodes) == 0 {
		t.Fatal("no TCP listening socket at all: Llamatray's own is missing from /proc/net/tcp")
	}
	return inodes
}
