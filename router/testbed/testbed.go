// Package testbed holds helpers for tests that run llama-server processes:
// it builds the fake llama-server (router/testbed/fakellama) once per test
// binary, finds the real one, picks free ports, polls for conditions and
// reads the fake's record files.
package testbed

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakePackage is the fake llama-server's package, relative to the module root.
const fakePackage = "./router/testbed/fakellama"

// build is the one build of the fake per test binary.
var build struct {
	once sync.Once
	path string // the binary, when err is nil
	err  error
}

// FakeEnv names a fake llama-server built beforehand, which FakeLlamaServer
// then returns instead of building one: for test binaries that run where there
// is no Go toolchain, such as Windows test binaries under Wine.
const FakeEnv = "LLAMATRAY_FAKE_LLAMA_SERVER"

// FakeLlamaServer builds the fake llama-server once per test binary and
// returns the binary's path. The binary, named llama-server, lives in a
// temporary directory named after a hash of the fake's sources and the Go
// version, so test binaries share it and rebuild only when the fake changes;
// it is never removed. A failed build fails the test. With $LLAMATRAY_FAKE_LLAMA_SERVER
// set, that file is the fake.
func FakeLlamaServer(tb testing.TB) string {
	tb.Helper()
	build.once.Do(func() {
		if p := os.Getenv(FakeEnv); p != "" {
			build.path = p
			if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
				build.err = fmt.Errorf("%s=%s is not a file (%v)", FakeEnv, p, err)
			}
			return
		}
		build.path, build.err = buildFake()
	})
	if build.err != nil {
		tb.Fatalf("testbed: %v", build.err)
		return ""
	}
	return build.path
}

func buildFake() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return "", err
	}
	key, err := sourceKey(filepath.Join(root, filepath.FromSlash(fakePackage)))
	if err != nil {
		return "", fmt.Errorf("hash fake llama-server sources: %w", err)
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("llamatray-fakellama-%d-%s", os.Getuid(), key))
	bin := filepath.Join(dir, "llama-server")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build fake llama-server: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", fmt.Errorf("build fake llama-server: %w", err)
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, filepath.Base(bin))
	cmd := exec.Command(goTool(), "build", "-o", out, fakePackage)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s (in %s): %w\n%s", fakePackage, root, err, msg)
	}
	// Rename is atomic: concurrent test binaries building the same key both succeed.
	if err := os.Rename(out, bin); err != nil {
		return "", fmt.Errorf("build fake llama-server: %w", err)
	}
	return bin, nil
}

// sourceKey hashes the fake's non-test Go files with the Go version and platform.
func sourceKey(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	n := 0
	for _, f := range files { // Glob sorts its result
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(data))
		h.Write(data)
		n++
	}
	if n == 0 {
		return "", fmt.Errorf("no Go files in %s", dir)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// moduleRoot walks up from dir to the directory holding go.mod.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod in %s or any parent directory", dir)
		}
		d = parent
	}
}

// goTool is the go command of the toolchain running the tests, else the one on PATH.
func goTool() string {
	exe := "go"
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	if root := runtime.GOROOT(); root != "" {
		p := filepath.Join(root, "bin", exe)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return exe
}

// RealLlamaServer returns the llama-server named by $LLAMA_SERVER, or skips
// the test when it is not set. A set but missing path fails the test.
func RealLlamaServer(tb testing.TB) string {
	tb.Helper()
	p := os.Getenv("LLAMA_SERVER")
	if p == "" {
		tb.Skip("LLAMA_SERVER not set: run `make llama-server` and export LLAMA_SERVER=... to run the end-to-end tests")
	}
	fi, err := os.Stat(p)
	if err != nil {
		tb.Fatalf("LLAMA_SERVER=%s: %v", p, err)
		return ""
	}
	if fi.IsDir() {
		tb.Fatalf("LLAMA_SERVER=%s is a directory, want the llama-server binary", p)
		return ""
	}
	return p
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("testbed: find a free port: %v", err)
		return 0
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		tb.Fatalf("testbed: release port %d: %v", port, err)
	}
	return port
}

// Poll asks cond every interval until it holds (true), or until timeout has passed (0: no timeout)
// or ctx ends (false). It is the one poll loop of the tests and the harnesses; WaitFor is it for a
// test.
func Poll(ctx context.Context, timeout, interval time.Duration, cond func() bool) bool {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// WaitFor polls cond every 10ms until it returns true, or fails the test
// with msg once timeout has elapsed.
func WaitFor(tb testing.TB, timeout time.Duration, msg string, cond func() bool) {
	tb.Helper()
	if !Poll(context.Background(), timeout, 10*time.Millisecond, cond) {
		tb.Fatalf("timed out after %s waiting for %s", timeout, msg)
	}
}

// RecordEvent is one line of a fake llama-server's record file. Events:
// start (Args), ready, request (Path, Model, Stream), cancel, sleep, wake,
// signal (Signal) and exit (Code).
type RecordEvent struct {
	Event  string    `json:"event"`
	PID    int       `json:"pid"`
	Path   string    `json:"path,omitempty"`
	Model  string    `json:"model,omitempty"`
	Signal string    `json:"signal,omitempty"`
	Code   int       `json:"code,omitempty"`
	Time   time.Time `json:"time"`
	Args   []string  `json:"args,omitempty"`
	Stream bool      `json:"stream,omitempty"`
}

// ReadRecord parses a fake's record file. A file that does not exist yet
// holds no events; a last line still being written is left out; any other
// unparsable line fails the test.
func ReadRecord(tb testing.TB, path string) []RecordEvent {
	tb.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		tb.Fatalf("testbed: read record: %v", err)
		return nil
	}
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		data = data[:i+1] // a partial last line
	}
	var events []RecordEvent
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ev RecordEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			tb.Fatalf("testbed: %s:%d: %v", path, n, err)
			return nil
		}
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("testbed: read record %s: %v", path, err)
	}
	return events
}

// Symlink makes link a symbolic link to target, or skips the test where this system makes none: a
// Windows without Developer Mode refuses, and Wine's CreateSymbolicLink reports success and makes
// no link, so the link is checked to be one.
func Symlink(tb testing.TB, target, link string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		tb.Skipf("no symbolic links here: %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		os.Remove(link)
		tb.Skip("no symbolic links here: the link made is not one")
	}
}

// ReadSSEEvent reads one server-sent event block (up to a blank line), failing tb when none
// comes within 10 s: a stream that is buffered.
func ReadSSEEvent(t testing.TB, br *bufio.Reader) string {
	t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		var b strings.Builder
		for {
			line, err := br.ReadString('\n')
			b.WriteString(line)
			if err != nil || line == "\n" {
				ch <- res{b.String(), err}
				return
			}
		}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("reading event: %q, %v", r.s, r.err)
		}
		return r.s
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s: the stream is buffered")
		return ""
	}
}
