//go:build !windows

package child

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Sockets live in a per-run folder of mode 0700 under $XDG_RUNTIME_DIR, have unique short names,
// lose their file on Put and their folder on Close; folders of dead processes are swept.
func TestSocketsFolder(t *testing.T) {
	runtimeDir := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", runtimeDir)

	// A folder left by a process that is gone, and one of a live process.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(runtimeDir, dirPrefix+strconv.Itoa(dead.Process.Pid)+"-x")
	live := filepath.Join(runtimeDir, dirPrefix+"1-x") // pid 1 is always alive
	for _, d := range []string{stale, live} {
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
	}

	s := NewSockets()
	if s.Dir() != "" {
		t.Fatal("folder created before the first Get")
	}
	a, err := s.Get()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Get()
	dir := s.Dir()
	if filepath.Dir(dir) != runtimeDir || filepath.Dir(a.Socket) != dir || a.Socket == b.Socket || a.Port != 0 ||
		!strings.HasSuffix(a.Socket, ".sock") || !strings.HasPrefix(filepath.Base(dir), dirPrefix+strconv.Itoa(os.Getpid())+"-") {
		t.Fatalf("folder %s, sockets %+v %+v", dir, a, b)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("folder mode %v, %v", fi.Mode(), err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale folder of a dead process kept: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("folder of a live process removed: %v", err)
	}
	if a.URL().Host == b.URL().Host || a.URL().Host != filepath.Base(a.Socket) {
		t.Fatalf("URL hosts %s %s", a.URL(), b.URL())
	}

	if err := os.WriteFile(a.Socket, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "other.sock")
	_ = os.WriteFile(outside, nil, 0o600)
	s.Put(a)
	s.Put(Addr{Socket: outside}) // not ours: left alone
	if _, err := os.Stat(a.Socket); !os.IsNotExist(err) {
		t.Fatalf("socket file kept after Put: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("Put removed a file outside its folder: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("folder kept after Close: %v", err)
	}
	if _, err := s.Get(); err == nil {
		t.Fatal("Get after Close succeeded")
	}
}

// Without $XDG_RUNTIME_DIR the folder goes to the temporary directory.
func TestSocketsWithoutRuntimeDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", tmp)
	s := NewSockets()
	if _, err := s.Get(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if filepath.Dir(s.Dir()) != tmp {
		t.Fatalf("folder %s, want one in %s", s.Dir(), tmp)
	}
}

// Concurrent Gets share one folder and never hand out a path twice; Close before any Get makes no
// folder.
func TestSocketsConcurrent(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	s := NewSockets()
	const n = 64
	paths := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			a, err := s.Get()
			if err != nil {
				t.Error(err)
			}
			paths <- a.Socket
		})
	}
	wg.Wait()
	close(paths)
	seen := map[string]bool{}
	for p := range paths {
		if seen[p] || filepath.Dir(p) != s.Dir() {
			t.Fatalf("path %s (folder %s) handed out twice or outside the folder", p, s.Dir())
		}
		seen[p] = true
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	empty := NewSockets()
	if err := empty.Close(); err != nil || empty.Dir() != "" {
		t.Fatalf("Close before Get: %v, folder %q", err, empty.Dir())
	}
	if _, err := empty.Get(); err == nil {
		t.Fatal("Get after Close succeeded")
	}
}
