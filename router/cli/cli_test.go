package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adrg/xdg"

	"github.com/llamatray/llamatray/router/client"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

type out struct{ stdout, stderr bytes.Buffer }

func runCLI(t *testing.T, args ...string) (int, *out) {
	t.Helper()
	o := &out{}
	env := Env{Stdout: &o.stdout, Stderr: &o.stderr, Getenv: func(string) string { return "" }, GOOS: "linux"}
	return run(args, Build{Version: "1.2.3", Commit: "abc"}, nil, env), o
}

// isolate points every platform directory into a temp dir.
func isolate(t *testing.T) string {
	dir := t.TempDir()
	t.Cleanup(xdg.Reload) // registered first, so it runs after the variables are restored
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	t.Setenv("HOME", dir)
	xdg.Reload()
	return dir
}

func TestVersionAndUsage(t *testing.T) {
	code, o := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(o.stdout.String(), "llamatray 1.2.3 (commit abc, go") {
		t.Fatalf("version: %d %q", code, o.stdout.String())
	}
	if code, o := runCLI(t, "frobnicate"); code != 2 || !strings.Contains(o.stderr.String(), "unknown command") {
		t.Fatalf("unknown command: %d %q", code, o.stderr.String())
	}
	if code, o := runCLI(t, "serve", "--no-such-flag"); code != 2 || !strings.Contains(o.stderr.String(), "no-such-flag") {
		t.Fatalf("unknown flag: %d %q", code, o.stderr.String())
	}
	if code, o := runCLI(t, "serve", "--memory-limit", "lots"); code != 2 {
		t.Fatalf("bad size: %d %q", code, o.stderr.String())
	}
	if code, o := runCLI(t, "serve", "-h"); code != 0 || !strings.Contains(o.stderr.String(), "--queue-timeout") && !strings.Contains(o.stderr.String(), "-queue-timeout") {
		t.Fatalf("help: %d %q", code, o.stderr.String())
	}
}

func TestNoDisplay(t *testing.T) {
	isolate(t)
	code, o := runCLI(t)
	if code != 1 || !strings.Contains(o.stderr.String(), "llamatray serve") {
		t.Fatalf("no display: %d %q", code, o.stderr.String())
	}
}

func TestBadConfigNamesLine(t *testing.T) {
	dir := isolate(t)
	path := filepath.Join(dir, "bad.toml")
	os.WriteFile(path, []byte("listen = \"127.0.0.1:8080\"\nmax_loded = 3\n"), 0o644)
	code, o := runCLI(t, "serve", "--config", path)
	if code != 1 || !strings.Contains(o.stderr.String(), "bad.toml:2") || !strings.Contains(o.stderr.String(), "max_loded") {
		t.Fatalf("bad config: %d %q", code, o.stderr.String())
	}
}

func TestModelsListsCatalog(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	if err := ggufwrite.WriteFile(filepath.Join(dir, "tiny-chat.gguf"), ggufwrite.Header(ggufwrite.HeaderOptions{Name: "Tiny", Blocks: 4, Embedding: 256, ContextLength: 8192, FileType: 15})); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "broken.gguf"), []byte("not a gguf"), 0o644)
	code, o := runCLI(t, "models", "--models-dir", dir)
	if code != 0 {
		t.Fatalf("models: %d %s", code, o.stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(o.stdout.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("table %q", o.stdout.String())
	}
	for _, want := range []string{"tiny-chat", "llama", "Q4_K_M", "8192"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("row %q lacks %q", lines[1], want)
		}
	}
	if !strings.Contains(o.stderr.String(), "broken.gguf") {
		t.Errorf("corrupt file not reported: %q", o.stderr.String())
	}
}

func TestPortInUse(t *testing.T) {
	isolate(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, o := runCLI(t, "serve", "--addr", ln.Addr().String(), "--models-dir", t.TempDir(), "--llama-server", testbed.FakeLlamaServer(t))
	if code != 1 || !strings.Contains(o.stderr.String(), "cannot listen on "+ln.Addr().String()) {
		t.Fatalf("port in use: %d %q", code, o.stderr.String())
	}
}

// serve runs headless; ps, load and unload talk to it; SIGINT stops it and every child.
func TestServePSLoadUnload(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m1.gguf"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ggufwrite.WriteFile(filepath.Join(dir, "m1.gguf"), ggufwrite.Header(ggufwrite.HeaderOptions{Blocks: 2, Embedding: 64})); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	done := make(chan int, 1)
	go func() {
		code, o := runCLI(t, "serve", "--addr", addr, "--models-dir", dir, "--llama-server", testbed.FakeLlamaServer(t), "--log-level", "warn")
		if code != 0 {
			t.Errorf("serve: %d %s", code, o.stderr.String())
		}
		done <- code
	}()
	c := client.New(addr)
	testbed.WaitFor(t, 30*time.Second, "serve to answer", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return c.Ping(ctx) == nil
	})
	if code, o := runCLI(t, "load", "m1", "--addr", addr); code != 0 || !strings.Contains(o.stdout.String(), "m1 loaded") {
		t.Fatalf("load: %d %q %q", code, o.stdout.String(), o.stderr.String())
	}
	code, o := runCLI(t, "ps", "--addr", addr)
	if code != 0 || !strings.Contains(o.stdout.String(), "m1") || !strings.Contains(o.stdout.String(), "loaded") {
		t.Fatalf("ps: %d %q %q", code, o.stdout.String(), o.stderr.String())
	}
	if code, o := runCLI(t, "load", "nope", "--addr", addr); code != 1 || !strings.Contains(o.stderr.String(), "nope") {
		t.Fatalf("load unknown: %d %q", code, o.stderr.String())
	}
	if code, o := runCLI(t, "unload", "m1", "--addr", addr); code != 0 {
		t.Fatalf("unload: %d %q", code, o.stderr.String())
	}
	interruptSelf(t)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop on SIGINT")
	}
}
