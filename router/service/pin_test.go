package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adrg/xdg"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// isolateHome points HOME and the XDG folders at a temporary folder for the test.
func isolateHome(t *testing.T) {
	t.Helper()
	home := t.TempDir()
	t.Cleanup(xdg.Reload)
	for k, v := range map[string]string{"HOME": home, "XDG_DATA_HOME": filepath.Join(home, "data"),
		"XDG_STATE_HOME": filepath.Join(home, "state"), "XDG_CONFIG_HOME": filepath.Join(home, "config")} {
		t.Setenv(k, v)
	}
	xdg.Reload()
}

// startedService builds and starts a service from cfg (its file at cfgPath), stopped when the test ends.
func startedService(t *testing.T, cfg config.Config, cfgPath string) *Service {
	t.Helper()
	return startedServiceWith(t, cfg, Options{ConfigPath: cfgPath})
}

// startedServiceWith is startedService with options of its own (a discarding logger when o has none).
func startedServiceWith(t *testing.T, cfg config.Config, o Options) *Service {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	svc, err := New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		svc.Stop(ctx)
	})
	return svc
}

// pinService runs a service over one model, "m", whose configuration file is at cfgPath.
func pinService(t *testing.T, cfgPath string) *Service {
	isolateHome(t)
	models := t.TempDir()
	if err := ggufwrite.WriteFile(filepath.Join(models, "m.gguf"), ggufwrite.Header(ggufwrite.HeaderOptions{Blocks: 2, Embedding: 64})); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg.ModelDirs = []string{models}
	cfg.ScanDefaultDirs = false
	cfg.LlamaServer = "/nonexistent/llama-server"
	cfg.Models = map[string]config.Model{"m": {CtxSize: 1024}}
	return startedService(t, cfg, cfgPath)
}

// A pin takes effect at once and is saved with the model's other settings; an unknown model is
// refused and nothing is saved.
func TestSetPinnedSaves(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	svc := pinService(t, path)
	if err := svc.SetPinned("m", true); err != nil {
		t.Fatal(err)
	}
	saved, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := svc.Model("m"); !m.Pinned || !saved.Models["m"].Pinned || saved.Models["m"].CtxSize != 1024 || !svc.Config().Models["m"].Pinned {
		t.Fatalf("after pinning: engine %v, saved %+v", m.Pinned, saved.Models["m"])
	}
	var unknown *engine.UnknownModelError
	if err := svc.SetPinned("nope", true); !errors.As(err, &unknown) {
		t.Fatalf("pinning an unknown model: %v", err)
	}
	if again, _ := config.Load(path); len(again.Models) != 1 {
		t.Fatalf("an unknown model reached the file: %+v", again.Models)
	}
	if err := svc.SetPinned("m", false); err != nil {
		t.Fatal(err)
	}
	if again, _ := config.Load(path); again.Models["m"].Pinned {
		t.Fatal("the unpin was not saved")
	}
}

// When the file cannot be written the pin still holds for the run, and the error says so.
func TestSetPinnedUnsavedSaysSo(t *testing.T) {
	dir := t.TempDir() // a folder where the file should be: Save must fail
	svc := pinService(t, dir)
	err := svc.SetPinned("m", true)
	if err == nil || !strings.Contains(err.Error(), "pinned for this run") {
		t.Fatalf("pin with an unwritable config: %v", err)
	}
	if m, _ := svc.Model("m"); !m.Pinned || !svc.Config().Models["m"].Pinned {
		t.Fatal("the pin was lost")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("the folder was replaced: %v", err)
	}
}
