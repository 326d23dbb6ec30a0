package service

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
)

// The llama-server in use is asked once whether it takes --fit-target: the fake one does (as
// llama-server 0.7.0 does), so the engine passes children their device share; one whose --help
// does not list it gets none.
func TestTakesFitTarget(t *testing.T) {
	fake := testbed.FakeLlamaServer(t)
	cfg := config.Default()
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg.ModelDirs = []string{t.TempDir()}
	cfg.ScanDefaultDirs = false
	cfg.LlamaServer = fake
	svc, err := New(cfg, Options{Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if ls := svc.LlamaServer(); ls.Path != fake || !ls.FitTarget {
		t.Fatalf("llama-server %+v, want the fake, taking --fit-target", ls)
	}
	if !limits(cfg, svc.LlamaServer()).FitTarget {
		t.Fatal("the engine's limits do not pass --fit-target on")
	}
	if runtime.GOOS == "windows" {
		return
	}
	old := filepath.Join(t.TempDir(), "llama-server")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho '-h,    --help, --usage                  print usage and exit'\necho '-ngl,  --n-gpu-layers N                max. number of layers to store in VRAM'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if svc.takesFitTarget(t.Context(), old) {
		t.Fatal("a llama-server whose --help has no --fit-target takes it")
	}
}
