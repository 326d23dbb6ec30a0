package service

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// A preset file is read in place: its sections' aliases, tags and files are served; it is read
// again when it changed and on a reload; a file that does not read leaves the presets in force.
func TestPresetsReadInPlace(t *testing.T) {
	isolateHome(t)
	models, elsewhere := t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(models, "m.gguf"), filepath.Join(elsewhere, "solo.gguf")} {
		if err := ggufwrite.WriteFile(p, ggufwrite.Header(ggufwrite.HeaderOptions{Blocks: 2, Embedding: 64})); err != nil {
			t.Fatal(err)
		}
	}
	preset := filepath.Join(t.TempDir(), "presets.ini")
	write := func(text string) {
		if err := os.WriteFile(preset, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(fmt.Sprintf("[*]\nctx-size = 2048\n\n[m]\nalias = x\ntags = chat\n\n[other]\nmodel = %s\n", filepath.Join(elsewhere, "solo.gguf")))
	cfg := config.Default()
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg.ModelDirs, cfg.ScanDefaultDirs = []string{models}, false
	cfg.LlamaServer = "/nonexistent/llama-server"
	cfg.Presets = preset
	cfgPath := filepath.Join(t.TempDir(), "config.toml")
	svc := startedService(t, cfg, cfgPath)
	resolves := func(name, want string) bool {
		id, err := svc.Engine().Resolve(name)
		return err == nil && id == want
	}
	if !resolves("x", "m") || !resolves("other", "solo") {
		t.Fatal("the presets' names do not resolve")
	}
	if v, _ := svc.Model("m"); !slices.Equal(v.Tags, []string{"chat"}) || svc.config().ModelSettings("solo").CtxSize != 2048 {
		t.Fatalf("tags %v, ctx %d", v.Tags, svc.config().ModelSettings("solo").CtxSize)
	}
	write("[m]\nalias = y\ntags = chat\n")
	if err := svc.reloadPresets(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if !resolves("y", "m") || resolves("x", "m") || resolves("other", "solo") {
		t.Fatal("the changed file was not taken in")
	}
	write("[m\nalias = z\n")
	if err := svc.reloadPresets(context.Background(), false); err == nil || !strings.Contains(err.Error(), "presets.ini:1") {
		t.Fatalf("a broken file: %v", err)
	}
	if !resolves("y", "m") {
		t.Fatal("a broken file took the presets in force away")
	}
	write("[m]\nalias = w\n")
	if err := svc.reload(context.Background()); err != nil || !resolves("w", "m") {
		t.Fatalf("GET /models?reload=1: %v", err)
	}
	if saved, err := os.ReadFile(cfgPath); err == nil && strings.Contains(string(saved), "alias") {
		t.Fatal("the presets reached the configuration file")
	}
}
