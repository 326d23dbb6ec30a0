package app

import (
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
)

// draftBackend is a fake backend that knows which models can draft for which.
type draftBackend struct {
	*fakeBackend
	ok      []string
	refused map[string]string
}

func (d draftBackend) DraftCandidates(string) ([]string, map[string]string, error) {
	return d.ok, d.refused, nil
}

// The draft's part of the form saves draft, draft_gpu_layers and draft_max, refuses values that are
// not numbers in range, keeps a draft set elsewhere meanwhile when the user left it, restarts an
// idle model when it changes, and a variant holds only the draft settings that differ.
func TestDraftForm(t *testing.T) {
	cfg := config.Default()
	cfg.Models = map[string]config.Model{"big": {CtxSize: 4096}}
	m := Model{ModelStatus: engine.ModelStatus{ID: "big"}, ContextLength: 8192}
	f := formFrom(cfg.Models["big"])
	f.Draft = draftForm{Model: "small", GPULayers: "-1", Max: "8"}
	out, probs := f.apply(cfg, "big", m)
	sec := out.Models["big"]
	if len(probs) > 0 || sec.Draft != "small" || sec.DraftGPULayers == nil || *sec.DraftGPULayers != -1 || sec.DraftMax != 8 || sec.CtxSize != 4096 {
		t.Fatalf("%+v %v", sec, probs)
	}
	if formFrom(sec).Draft != f.Draft {
		t.Fatalf("the form from the section: %+v", formFrom(sec).Draft)
	}
	if !needsRestart(cfg, out, "big") {
		t.Error("a new draft does not restart the model")
	}
	for _, bad := range []draftForm{{Model: "small", GPULayers: "-2"}, {Model: "small", Max: "0"}, {Max: "many"}} {
		g := f
		g.Draft = bad
		if _, probs := g.apply(cfg, "big", m); len(probs) != 1 || !strings.HasPrefix(probs[0].Field, "draft_") {
			t.Errorf("%+v: %v", bad, probs)
		}
	}

	// The window opened before a draft was set elsewhere; its save of another field keeps it.
	orig := formFrom(cfg.Models["big"])
	mine := orig
	mine.CtxSize = "2048"
	next, probs := mine.edit(out, "big", orig, m)
	if s := next.Models["big"]; len(probs) > 0 || s.Draft != "small" || s.DraftMax != 8 || s.CtxSize != 2048 {
		t.Fatalf("a save over a draft set meanwhile: %+v %v", s, probs)
	}

	// As a variant: only what differs from the model's own section.
	own := config.Model{Draft: "small", DraftMax: 8}
	var v config.Model
	draftOver(&v, own, config.Model{Draft: "small", DraftMax: 16})
	if v.Draft != "" || v.DraftMax != 16 || v.DraftGPULayers != nil {
		t.Fatalf("variant %+v", v)
	}
}

// The window offers the models whose vocabulary matches, never the model itself, keeps a draft
// configured by hand among the choices, and says why the others are not offered.
func TestDraftChoices(t *testing.T) {
	b := draftBackend{fakeBackend: newFakeBackend(Snapshot{}), ok: []string{"big", "small", "tiny"},
		refused: map[string]string{"alien": "alien cannot draft for big: their tokenizers differ (big: llama, alien: gpt2)"}}
	got, note := draftChoices(b, "big", "")
	if strings.Join(got, ",") != "small,tiny" {
		t.Errorf("offered %q", got)
	}
	if note != "Not offered, another vocabulary: alien cannot draft for big: their tokenizers differ (big: llama, alien: gpt2)." {
		t.Errorf("note %q", note)
	}
	if got, _ := draftChoices(b, "big", "org/repo:Q4_K_M"); strings.Join(got, ",") != "small,tiny,org/repo:Q4_K_M" {
		t.Errorf("with a configured draft: %q", got)
	}
}
