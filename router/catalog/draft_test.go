package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// tokensKV is a tokenizer.ggml.tokens array of n tokens, "t0".."tN", with the token at id odd
// (if any) spelled otherwise.
func tokensKV(n, odd int) ggufwrite.KV {
	toks := make([]string, n)
	for i := range toks {
		toks[i] = fmt.Sprintf("t%d", i)
	}
	if odd >= 0 {
		toks[odd] = "other"
	}
	return ggufwrite.KV{Key: "tokenizer.ggml.tokens", Value: toks}
}

// Vocabularies compare by llama.cpp's rule, read from the headers: the same tokenizer, special
// tokens and texts (ids 5 on, up to the smaller size), sizes at most 128 apart. Each refusal names
// both models and says why.
func TestDraftVocab(t *testing.T) {
	dir := t.TempDir()
	writeModel(t, filepath.Join(dir, "target.gguf"), ggufwrite.HeaderOptions{Embedding: 256, Blocks: 4})
	cases := []struct {
		name string
		o    ggufwrite.HeaderOptions
		want string // "" = compatible; else a part of the reason
	}{
		{"narrower", ggufwrite.HeaderOptions{Embedding: 64}, ""},
		{"eight-more", ggufwrite.HeaderOptions{Vocab: 520}, ""},
		{"far-bigger", ggufwrite.HeaderOptions{Vocab: 712}, "may differ in size by at most 128"},
		{"gpt2", ggufwrite.HeaderOptions{ExtraKVs: []ggufwrite.KV{{Key: "tokenizer.ggml.model", Value: "gpt2"}}}, "tokenizers differ (target: llama, gpt2: gpt2)"},
		{"eos", ggufwrite.HeaderOptions{ExtraKVs: []ggufwrite.KV{{Key: "tokenizer.ggml.eos_token_id", Value: uint32(7)}}}, "end-of-text tokens differ (target: id 2"},
		{"nobos", ggufwrite.HeaderOptions{ExtraKVs: []ggufwrite.KV{{Key: "tokenizer.ggml.add_bos_token", Value: false}}}, "beginning-of-text tokens differ"},
		{"retext", ggufwrite.HeaderOptions{ExtraKVs: []ggufwrite.KV{tokensKV(512, 300)}}, "their tokens differ (ids 5 to 511 compared)"},
	}
	for _, c := range cases {
		writeModel(t, filepath.Join(dir, c.name+".gguf"), c.o)
	}
	// Two vocabularies of the same made-up texts but for ids below 5, which llama.cpp does not compare.
	writeModel(t, filepath.Join(dir, "own.gguf"), ggufwrite.HeaderOptions{ExtraKVs: []ggufwrite.KV{tokensKV(512, -1)}})
	writeModel(t, filepath.Join(dir, "own-low.gguf"), ggufwrite.HeaderOptions{ExtraKVs: []ggufwrite.KV{tokensKV(512, 3)}})
	cat := New(Options{Dirs: []string{dir}})
	if err := cat.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	get := func(id string) Model {
		m, ok := cat.Lookup(id)
		if !ok {
			t.Fatalf("%s not found; warnings %q", id, cat.Warnings())
		}
		return m
	}
	target := get("target")
	if v := target.Vocab; v.Model != "llama" || v.Size != 512 || v.BOS != 1 || v.EOS != 2 {
		t.Fatalf("target's vocabulary: %+v", v)
	}
	for _, c := range cases {
		err := DraftVocab("target", target.Vocab, c.name, get(c.name).Vocab)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && err == nil:
			t.Errorf("%s: accepted", c.name)
		case c.want != "":
			var vm *VocabMismatch
			if !errors.As(err, &vm) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), c.name+" cannot draft for target: ") {
				t.Errorf("%s: %v, want %q", c.name, err, c.want)
			}
		}
	}
	if err := DraftVocab("own", get("own").Vocab, "own-low", get("own-low").Vocab); err != nil {
		t.Errorf("ids below 5 compared: %v", err)
	}
	if err := DraftVocab("target", target.Vocab, "none", Vocab{}); err == nil || !strings.Contains(err.Error(), "none's header has no vocabulary") {
		t.Errorf("no vocabulary: %v", err)
	}

	ok, refused, err := cat.DraftCandidates("target")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ok, ",") != "eight-more,narrower,target" {
		t.Errorf("candidates %q", ok)
	}
	if !strings.Contains(refused["gpt2"], "tokenizers differ") || len(refused) != 7 {
		t.Errorf("refused %q", refused)
	}
}

// A configured draft is resolved by the scan: its ID and file on the entry, its weights and KV
// cache in the estimate (more for a longer context); a missing draft or one of another vocabulary
// leaves the reason instead, naming both models, and adds nothing.
func TestDraftEstimate(t *testing.T) {
	dir := t.TempDir()
	writeModel(t, filepath.Join(dir, "big.gguf"), ggufwrite.HeaderOptions{Embedding: 512, Blocks: 8, FFN: 1024})
	writeModel(t, filepath.Join(dir, "small.gguf"), ggufwrite.HeaderOptions{Embedding: 128, Blocks: 2})
	writeModel(t, filepath.Join(dir, "alien.gguf"), ggufwrite.HeaderOptions{Vocab: 32000})
	drafts := map[string]string{}
	ctx := 2048
	cat := New(Options{Dirs: []string{dir}, Params: func(id string) EstimateParams {
		return EstimateParams{ContextSize: ctx, Draft: drafts[id]}
	}})
	scan := func() {
		t.Helper()
		if err := cat.Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	scan()
	alone, _ := cat.Lookup("big")
	small, _ := cat.Lookup("small")
	if alone.Draft != "" || alone.Estimate.Draft != 0 {
		t.Fatalf("no draft configured: %+v", alone)
	}

	drafts["big"] = "SMALL" // any case, as a name resolves
	scan()
	with, _ := cat.Lookup("big")
	if with.Draft != "small" || with.DraftPath != small.Path || with.DraftError != "" {
		t.Fatalf("draft %q at %q, error %q", with.Draft, with.DraftPath, with.DraftError)
	}
	if got := total(with.Estimate) - total(alone.Estimate); got != with.Estimate.Draft || got < small.SizeBytes {
		t.Fatalf("the draft adds %d (its own %d), want at least its file's %d", got, with.Estimate.Draft, small.SizeBytes)
	}
	ctx = 8192 // the draft's KV cache grows with the model's context
	scan()
	longer, _ := cat.Lookup("big")
	if longer.Estimate.Draft <= with.Estimate.Draft {
		t.Fatalf("draft at 8k %d, at 2k %d", longer.Estimate.Draft, with.Estimate.Draft)
	}
	e, err := cat.EstimateWith("big", EstimateParams{ContextSize: 8192, Draft: "small"})
	if err != nil || e != longer.Estimate {
		t.Fatalf("EstimateWith %+v %v, scan %+v", e, err, longer.Estimate)
	}

	for draft, want := range map[string]string{
		"nothing":         `big's draft model "nothing" is not in the catalog`,
		"org/repo:Q4_K_M": "big's draft model org/repo:Q4_K_M is not on this machine: download it with `llamatray pull org/repo:Q4_K_M`",
		"alien":           "alien cannot draft for big: big has 512 tokens and alien 32000",
	} {
		drafts["big"] = draft
		scan()
		m, _ := cat.Lookup("big")
		if !strings.Contains(m.DraftError, want) || m.Draft != "" || m.Estimate.Draft != 0 || total(m.Estimate) != total(longer.Estimate)-longer.Estimate.Draft {
			t.Errorf("%s: error %q, estimate %+v", draft, m.DraftError, m.Estimate)
		}
		var se *SettingsError
		if _, err := cat.EstimateWith("big", EstimateParams{ContextSize: 8192, Draft: draft}); !errors.As(err, &se) || se.Key != "draft" || !strings.Contains(se.Reason, want) {
			t.Errorf("%s: EstimateWith: %v", draft, err)
		}
	}
}

func total(e Estimate) int64 { return e.RAM + e.VRAM }

// A refused draft is logged once, not at every scan that finds it still refused.
func TestDraftRefusalLoggedOnce(t *testing.T) {
	dir := t.TempDir()
	writeModel(t, filepath.Join(dir, "big.gguf"), ggufwrite.HeaderOptions{})
	var logs logBuffer
	cat := New(Options{Dirs: []string{dir}, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Params: func(string) EstimateParams { return EstimateParams{Draft: "gone"} }})
	for range 3 {
		if err := cat.Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := logs.count("draft model refused"); n != 1 {
		t.Fatalf("logged %d times:\n%s", n, logs.String())
	}
}
