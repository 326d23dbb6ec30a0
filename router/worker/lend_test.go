//go:build unix

package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/wire"
)

// Callers asking for the token at once (the window's lines while the worker starts) all get the
// one the file holds.
func TestLendTokenOneForAll(t *testing.T) {
	for range 20 {
		dir := t.TempDir()
		l := NewLender(quiet(), dir, "v", func() string { return "" })
		got := make([]string, 8)
		var wg sync.WaitGroup
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tok, err := l.readToken(false)
				if err != nil {
					t.Error(err)
				}
				got[i] = tok
			}()
		}
		wg.Wait()
		b, _ := os.ReadFile(filepath.Join(dir, lendTokenFile))
		for i, tok := range got {
			if tok != strings.TrimSpace(string(b)) {
				t.Fatalf("caller %d got %q, the file holds %q", i, tok, b)
			}
		}
		if st, _ := os.Stat(filepath.Join(dir, lendTokenFile)); st.Mode().Perm() != 0o600 {
			t.Fatalf("token file mode %v, want 0600", st.Mode().Perm())
		}
	}
}

// A token file others may read is refused, saying why; no state folder is an error, not a token
// in the working directory.
func TestLendTokenRefused(t *testing.T) {
	dir := t.TempDir()
	l := NewLender(quiet(), dir, "v", func() string { return "" })
	if _, err := l.readToken(false); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, lendTokenFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.readToken(false); err == nil || !strings.Contains(err.Error(), "may be read by other users") {
		t.Fatalf("a token file readable by others: %v", err)
	}
	if _, err := NewLender(quiet(), "", "v", func() string { return "" }).readToken(false); err == nil || !strings.Contains(err.Error(), "no state folder") {
		t.Fatalf("no state folder: %v", err)
	}
}

// Changes at once (a new token while the settings change) leave one worker running, and none after
// close.
func TestLendOneWorkerAtATime(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	if err := os.Mkdir(pids, 0o755); err != nil {
		t.Fatal(err)
	}
	// llama-server's folder, with llama.cpp's RPC server beside it: this test binary as a stand-in.
	if err := os.WriteFile(filepath.Join(dir, "llama-server"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\necho $$ > %s/$$\nexec %s \"$@\"\n", pids, bin)
	if err := os.WriteFile(filepath.Join(dir, "ggml-rpc-server"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeRPCEnv, t.TempDir())
	l := NewLender(quiet(), filepath.Join(dir, "state"), "v", func() string { return filepath.Join(dir, "llama-server") })
	cfg := config.Default()
	cfg.Lend, cfg.LendListen = true, fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	l.Sync(cfg, false)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() { defer wg.Done(); l.Sync(cfg, i%2 == 0) }()
	}
	wg.Wait()
	testbed.WaitFor(t, 20*time.Second, "lending on", func() bool {
		st := l.Status(cfg)
		if st.State == wire.LendFailed {
			t.Fatalf("lending failed: %s", st.Error)
		}
		return st.State == wire.LendOn
	})
	if mode, _ := Isolation(); l.Status(cfg).Isolation != mode || mode == "" {
		t.Fatalf("lending's isolation %q, want the worker's %q", l.Status(cfg).Isolation, mode)
	}
	alive := func() []string {
		ents, _ := os.ReadDir(pids)
		var out []string
		for _, e := range ents {
			var pid int
			fmt.Sscan(e.Name(), &pid)
			if pid > 0 && syscall.Kill(pid, 0) == nil {
				out = append(out, e.Name())
			}
		}
		return out
	}
	testbed.WaitFor(t, 10*time.Second, "one rpc-server left", func() bool { return len(alive()) == 1 })
	l.Close()
	testbed.WaitFor(t, 10*time.Second, "no rpc-server left after close", func() bool { return len(alive()) == 0 })
	if st := l.Status(config.Config{}); st.State != wire.LendOff {
		t.Fatalf("after close: %+v", st)
	}
}
