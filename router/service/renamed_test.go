package service

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// A model in the Hugging Face cache, configured under its file-name ID before it was named
// ORG/REPO:QUANT: its settings apply under the new ID, its old ID and aliases still resolve, and
// the next write of the configuration leaves one section, under the new ID.
func TestRenamedModelKeepsItsSettings(t *testing.T) {
	isolateHome(t)
	hub := t.TempDir()
	snap := filepath.Join(hub, "models--Org--Tiny-GGUF", "snapshots", "r1")
	if err := errors.Join(os.MkdirAll(filepath.Join(hub, "models--Org--Tiny-GGUF", "refs"), 0o755), os.MkdirAll(snap, 0o755)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hub, "models--Org--Tiny-GGUF", "refs", "main"), []byte("r1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ggufwrite.WriteFile(filepath.Join(snap, "tiny-llama-Q8_0.gguf"), ggufwrite.Header(ggufwrite.HeaderOptions{Blocks: 2, Embedding: 64})); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "config.toml")
	text := fmt.Sprintf(`listen = "127.0.0.1:%d"
model_dirs = [%q]
scan_default_dirs = false
llama_server = "/nonexistent/llama-server"
default_model = "tiny-llama-Q8_0"

[models."tiny-llama-Q8_0"]
aliases = ["tiny"]
ctx_size = 1024
pinned = true
`, testbed.FreePort(t), hub)
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	svc := startedService(t, cfg, cfgPath)
	const id = "Org/Tiny-GGUF:Q8_0"
	for _, name := range []string{id, "tiny", "tiny-llama-Q8_0"} {
		if got, err := svc.Engine().Resolve(name); err != nil || got != id {
			t.Errorf("Resolve(%q) = %q, %v", name, got, err)
		}
	}
	if m, err := svc.Model(id); err != nil || m.ID != id || !m.Pinned {
		t.Fatalf("view: %+v %v", m, err)
	}
	if in := svc.Config(); in.ModelSettings(id).CtxSize != 1024 || in.DefaultModel != id {
		t.Errorf("in force: %+v, default %q", in.ModelSettings(id), in.DefaultModel)
	}
	if err := svc.SetPinned(id, false); err != nil {
		t.Fatal(err)
	}
	saved, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(saved.Models) != 1 || saved.Models[id].Pinned || saved.Models[id].CtxSize != 1024 || saved.Models[id].Aliases[0] != "tiny" || saved.DefaultModel != id {
		t.Errorf("saved: %+v, default %q", saved.Models, saved.DefaultModel)
	}
	if b, _ := os.ReadFile(cfgPath); strings.Contains(string(b), `models."tiny-llama-Q8_0"`) {
		t.Errorf("the old section is still in the file")
	}
}
