package cli

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/config"
)

// `llamatray import llama-swap FILE` writes llama-swap's models into the configuration file and
// lists what it left out; a file that does not read, or a running instance, leaves the file as it was.
func TestImportLlamaSwapCommand(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing answers there
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	orig := "listen = \"" + addr + "\"\n"
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	runIt := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(append(args, "--config", path), Build{}, nil, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
		return out.String(), errb.String(), code
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("models:\n  a:\n    cmd: llama-server -m /m/a.gguf ${nope}\n"), 0o600)
	if out, e, code := runIt("import", "llama-swap", bad); code != 1 || !strings.Contains(e, "nothing was changed") || !strings.Contains(e, "unknown macro") {
		t.Fatalf("%d %s %s", code, out, e)
	}
	if b, _ := os.ReadFile(path); string(b) != orig {
		t.Fatalf("a bad file changed the configuration:\n%s", b)
	}
	good := "../config/testdata/llama-swap.yaml"
	out, e, code := runIt("import", "llama-swap", good)
	if code != 0 || !strings.Contains(out, "not carried over:") || !strings.Contains(out, "model vllm: its cmd runs docker, not llama-server") {
		t.Fatalf("%d %s %s", code, out, e)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.Models["Llama-3.2-3B-Q4_K_M"]; m.CtxSize != 8192 || len(cfg.ModelDirs) != 2 || cfg.Listen != addr {
		t.Fatalf("%+v %v", m, cfg.ModelDirs)
	}

	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"status":"ok","service":"llamatray"}`)) }))
	defer live.Close()
	before, _ := os.ReadFile(path)
	if out, e, code := runIt("import", "llama-swap", good, "--addr", strings.TrimPrefix(live.URL, "http://")); code != 1 || !strings.Contains(e, "quit it first") {
		t.Fatalf("while running: %d %s %s", code, out, e)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the import wrote while an instance runs")
	}
}
