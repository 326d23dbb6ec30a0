package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
)

const cliRepo = "Org/Tiny-GGUF"

// hubHome is a fresh home whose Hub is the stand-in; it returns the stand-in and a config file
// whose listen address has nothing behind it.
func hubHome(t *testing.T) (*fakehub.Hub, string) {
	t.Helper()
	dir := isolate(t)
	fh := fakehub.New()
	t.Cleanup(fh.Close)
	if err := fh.AddModelRepo(t.TempDir(), cliRepo, "Q4_K_M", "Q8_0"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_ENDPOINT", fh.URL())
	t.Setenv("HF_HOME", filepath.Join(dir, "hf"))
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_CACHE", "")
	cfg := config.Default()
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	path := filepath.Join(dir, "config.toml")
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	return fh, path
}

func runCLIEnv(t *testing.T, args ...string) (int, *out) {
	t.Helper()
	o := &out{}
	env := Env{Stdout: &o.stdout, Stderr: &o.stderr, Getenv: os.Getenv, GOOS: "linux"}
	return run(args, Build{Version: "1.2.3"}, nil, env), o
}

// Without a running instance: search, list a repo's quants, pull (verified and listed), rm.
func TestSearchPullRmDirect(t *testing.T) {
	fh, cfgPath := hubHome(t)
	code, o := runCLIEnv(t, "search", "tiny", "--config", cfgPath)
	if code != 0 || !strings.Contains(o.stdout.String(), cliRepo) {
		t.Fatalf("search: %d %s %s", code, o.stdout.String(), o.stderr.String())
	}
	code, o = runCLIEnv(t, "search", cliRepo, "--config", cfgPath)
	if code != 0 || !strings.Contains(o.stdout.String(), cliRepo+":Q8_0") {
		t.Fatalf("search repo: %d %s %s", code, o.stdout.String(), o.stderr.String())
	}
	code, o = runCLIEnv(t, "pull", "org/tiny-gguf:q8_0", "--config", cfgPath)
	if code != 0 || !strings.Contains(o.stdout.String(), "verified (sha256) and listed as") || !strings.Contains(o.stderr.String(), "100%") {
		t.Fatalf("pull: %d %q %q", code, o.stdout.String(), o.stderr.String())
	}
	code, o = runCLIEnv(t, "models", "--config", cfgPath)
	if code != 0 || !strings.Contains(o.stdout.String(), cliRepo+":Q8_0") || strings.Contains(o.stdout.String(), "Tiny-GGUF-Q8_0") {
		t.Fatalf("models after pull, under the name pulled: %d %s %s", code, o.stdout.String(), o.stderr.String())
	}
	code, o = runCLIEnv(t, "rm", cliRepo+":Q8_0", "--config", cfgPath)
	if code != 0 || !strings.Contains(o.stdout.String(), "removed") {
		t.Fatalf("rm: %d %s %s", code, o.stdout.String(), o.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("HF_HOME"), "hub", "models--Org--Tiny-GGUF")); !os.IsNotExist(err) {
		t.Errorf("rm left the repo folder: %v", err)
	}
	fh.Gate(cliRepo, "tok")
	code, o = runCLIEnv(t, "pull", cliRepo+":Q8_0", "--config", cfgPath)
	if code != 1 || !strings.Contains(o.stderr.String(), "HTTP 401") || !strings.Contains(o.stderr.String(), "HF_TOKEN") {
		t.Fatalf("gated pull: %d %q", code, o.stderr.String())
	}
	if code, o := runCLIEnv(t, "pull", "not-a-repo"); code != 2 {
		t.Fatalf("bad name: %d %q", code, o.stderr.String())
	}
}

// Through a running instance: the pull shows progress from /models/events and ends listed.
func TestPullThroughInstance(t *testing.T) {
	_, cfgPath := hubHome(t)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.LlamaServer = "/nonexistent/llama-server"
	svc := startService(t, cfg, cfgPath)
	code, o := runCLIEnv(t, "pull", cliRepo+":Q4_K_M", "--config", cfgPath)
	if code != 0 || !strings.Contains(o.stdout.String(), "listed as "+cliRepo+":Q4_K_M") {
		t.Fatalf("pull: %d %q %q", code, o.stdout.String(), o.stderr.String())
	}
	if _, ok := svc.Catalog().Lookup(cliRepo + ":q4_k_m"); !ok {
		t.Error("the instance does not list the pulled model")
	}
	code, o = runCLIEnv(t, "pull", cliRepo+":Q4_K_M", "--config", cfgPath)
	if code != 0 || !strings.Contains(o.stdout.String(), "already downloaded") {
		t.Fatalf("second pull: %d %q %q", code, o.stdout.String(), o.stderr.String())
	}
	code, o = runCLIEnv(t, "rm", cliRepo+":Q4_K_M", "--config", cfgPath)
	if code != 0 {
		t.Fatalf("rm: %d %q %q", code, o.stdout.String(), o.stderr.String())
	}
	if _, ok := svc.Catalog().Lookup(cliRepo + ":Q4_K_M"); ok {
		t.Error("the instance still lists the removed model")
	}
}
