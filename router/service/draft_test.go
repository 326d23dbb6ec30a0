package service

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// A model's draft becomes its child's flags, checked against llama-server 0.7.0's --help
// (--model-draft, --spec-type draft-simple, -ngld, --spec-draft-n-max), ahead of the user's args;
// its memory is in the model's estimate; a draft that is missing or of another vocabulary refuses
// the model's loads with a reason naming both, and no child starts.
func TestDraftSettings(t *testing.T) {
	isolateHome(t)
	models := t.TempDir()
	for name, o := range map[string]ggufwrite.HeaderOptions{
		"big":   {Blocks: 8, Embedding: 512, FFN: 1024, Heads: 4, Vocab: 512, ContextLength: 4096},
		"small": {Blocks: 2, Embedding: 128, FFN: 256, Heads: 4, Vocab: 512, ContextLength: 4096},
		"alien": {Blocks: 2, Embedding: 128, FFN: 256, Heads: 4, Vocab: 32000, ContextLength: 4096},
	} {
		if err := ggufwrite.WriteFile(filepath.Join(models, name+".gguf"), ggufwrite.Header(o)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default()
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg.ModelDirs = []string{models}
	cfg.ScanDefaultDirs = false
	cfg.LlamaServer = testbed.FakeLlamaServer(t)
	all := -1
	cfg.Models = map[string]config.Model{
		"big":   {CtxSize: 2048, Draft: "small", DraftGPULayers: &all, DraftMax: 8, Args: []string{"--spec-type", "ngram-simple"}},
		"small": {Draft: "alien"},
		"alien": {Draft: "nothing"},
	}
	svc := startedService(t, cfg, filepath.Join(t.TempDir(), "config.toml"))

	small, _ := svc.Catalog().Lookup("small")
	st := svc.settings("big")
	want := []string{"--model-draft", small.Path, "--spec-type", "draft-simple", "-ngld", "all", "--spec-draft-n-max", "8", "--spec-type", "ngram-simple"}
	if i := slices.Index(st.Args, "--model-draft"); i < 0 || !slices.Equal(st.Args[i:], want) || st.Refuse != "" {
		t.Fatalf("big's args %q (refused %q), want them to end %q", st.Args, st.Refuse, want)
	}

	noDraft := svc.config()
	m := noDraft.Models["big"]
	m.Draft = ""
	noDraft.Models = map[string]config.Model{"big": m}
	alone, _, err := svc.EstimateWith("big", noDraft)
	if err != nil {
		t.Fatal(err)
	}
	v, err := svc.Model("big")
	if err != nil {
		t.Fatal(err)
	}
	big, _ := svc.Catalog().Lookup("big")
	if v.EstimateBytes != alone+big.Estimate.Draft || big.Estimate.Draft < small.SizeBytes {
		t.Fatalf("big needs %d with its draft, %d alone; the draft %d (its file %d)", v.EstimateBytes, alone, big.Estimate.Draft, small.SizeBytes)
	}

	for id, reason := range map[string]string{
		"small": "alien cannot draft for small: small has 512 tokens and alien 32000",
		"alien": `alien's draft model "nothing" is not in the catalog`,
	} {
		_, err := svc.Engine().Acquire(context.Background(), id)
		var le *engine.LoadError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), reason) {
			t.Errorf("%s: %v, want %q", id, err, reason)
		}
		if st, _ := svc.Engine().Model(id); st.State != engine.StateUnloaded || st.PID != 0 {
			t.Errorf("%s: %s, pid %d", id, st.State, st.PID)
		}
	}
}
