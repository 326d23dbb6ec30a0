package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/client"
	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ghreleases"
)

// releasesStandIn serves b6000 (.zip) and b7100 (.tar.gz) wrapping the fake llama-server, and points
// LLAMATRAY_RELEASES_URL at it. PATH is emptied so that no other llama-server is found.
func releasesStandIn(t *testing.T) *ghreleases.Server {
	t.Helper()
	b, err := ghreleases.FromBinary(testbed.FakeLlamaServer(t))
	if err != nil {
		t.Fatal(err)
	}
	zipped, err := b.Zip()
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := b.TarGz("b7100")
	if err != nil {
		t.Fatal(err)
	}
	s := ghreleases.New()
	t.Cleanup(s.Close)
	s.Add("b6000", map[string][]byte{ghreleases.AssetName("b6000", ".zip"): zipped})
	s.Add("b7100", map[string][]byte{ghreleases.AssetName("b7100", ".tar.gz"): tgz})
	t.Setenv(releases.URLEnv, s.Base)
	t.Setenv("PATH", t.TempDir())
	t.Setenv("LLAMA_SERVER", "")
	return s
}

// writeListen writes a configuration whose listen address is a free port (nothing answers there).
func writeListen(t *testing.T, dir string) string {
	addr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	p := filepath.Join(dir, "config", "llamatray", "config.toml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(fmt.Sprintf("listen = %q\n", addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	return addr
}

// Without a running instance the commands change the data folder directly.
func TestLlamaServerDirect(t *testing.T) {
	home := isolate(t)
	releasesStandIn(t)
	writeListen(t, home)

	code, o := runCLI(t, "llama-server", "install", "b6000")
	if code != 0 {
		t.Fatalf("install: %d %s %s", code, o.stdout.String(), o.stderr.String())
	}
	out := o.stdout.String()
	for _, want := range []string{"llama.cpp b6000: " + ghreleases.AssetName("b6000", ".zip"), "why: CPU build", "downloading", "100%", "verified sha256", "installed llama.cpp b6000"} {
		if !strings.Contains(out, want) {
			t.Errorf("install output lacks %q:\n%s", want, out)
		}
	}
	root := filepath.Join(home, "data", "llamatray", "llama-server")
	if _, err := os.Stat(filepath.Join(root, "b6000", "llama-server")); err != nil {
		t.Fatalf("not installed under the data folder: %v", err)
	}
	if code, o := runCLI(t, "llama-server", "update"); code != 0 || !strings.Contains(o.stdout.String(), "installed llama.cpp b7100") {
		t.Fatalf("update: %d %s %s", code, o.stdout.String(), o.stderr.String())
	}
	if code, o := runCLI(t, "llama-server", "update"); code != 0 || !strings.Contains(o.stdout.String(), "llama.cpp b7100 (CPU) is up to date") {
		t.Fatalf("second update: %d %s %s", code, o.stdout.String(), o.stderr.String())
	}
	code, o = runCLI(t, "llama-server", "list", "--available")
	if code != 0 || !strings.Contains(o.stdout.String(), "b7100 *") || !strings.Contains(o.stdout.String(), "b6000") ||
		!strings.Contains(o.stdout.String(), "latest release b7100 for this machine") {
		t.Fatalf("list: %d %s %s", code, o.stdout.String(), o.stderr.String())
	}
	if code, o := runCLI(t, "llama-server", "use", "previous"); code != 0 || !strings.Contains(o.stdout.String(), "using llama.cpp b6000") {
		t.Fatalf("use: %d %s %s", code, o.stdout.String(), o.stderr.String())
	}
	if code, o := runCLI(t, "llama-server", "use", "b1"); code != 1 || !strings.Contains(o.stderr.String(), "not installed") {
		t.Fatalf("use missing: %d %s", code, o.stderr.String())
	}
	if code, o := runCLI(t, "llama-server", "install", "--backend", "cuda"); code != 1 || !strings.Contains(o.stderr.String(), "no cuda build") {
		t.Fatalf("install cuda: %d %s", code, o.stderr.String())
	}
	if code, _ := runCLI(t, "llama-server", "frob"); code != 2 {
		t.Fatalf("unknown subcommand: %d", code)
	}
}

// With an instance running, install goes through it: the instance finds the new build at once and
// /api/status names it.
func TestLlamaServerThroughInstance(t *testing.T) {
	home := isolate(t)
	releasesStandIn(t)
	addr := writeListen(t, home)
	dir := t.TempDir()
	done := make(chan int, 1)
	go func() {
		code, o := runCLI(t, "serve", "--models-dir", dir, "--log-level", "warn")
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
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ls := st.LlamaServer; ls.Path != "" {
		t.Fatalf("a llama-server was found before the install: %+v", ls)
	}
	code, o := runCLI(t, "llama-server", "install")
	if code != 0 || !strings.Contains(o.stdout.String(), "in the running Llamatray at http://"+addr) {
		t.Fatalf("install: %d %s %s", code, o.stdout.String(), o.stderr.String())
	}
	st, _ = c.Status(context.Background())
	ls := st.LlamaServer
	if ls.Build != "b7100" || ls.Source != "installed" || !strings.HasPrefix(ls.Path, filepath.Join(home, "data")) {
		t.Errorf("status after install: %+v", ls)
	}
	if code, o := runCLI(t, "llama-server", "list"); code != 0 || !strings.Contains(o.stdout.String(), "in use: "+ls.Path) {
		t.Errorf("list: %d %s %s", code, o.stdout.String(), o.stderr.String())
	}
	interruptSelf(t)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop on SIGINT")
	}
}
