package app

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/fit"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
	"github.com/llamatray/llamatray/router/view"
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

// heldFlags is the service's backend whose llama-server flags arrive only once hold is closed and
// whose estimates answer only once estimates is, so a test decides what comes first.
type heldFlags struct {
	*serviceBackend
	hold, estimates atomic.Pointer[chan struct{}]
}

func (h *heldFlags) LlamaServerFlags(ctx context.Context) ([]string, error) {
	<-*h.hold.Load()
	return h.serviceBackend.LlamaServerFlags(ctx)
}

func (h *heldFlags) EstimateWith(id string, cfg config.Config) (int64, bool, fit.Room, error) {
	<-*h.estimates.Load()
	return h.serviceBackend.EstimateWith(id, cfg)
}

// The draft's part of the form saves draft, draft_gpu_layers and draft_max, refuses values that are
// not numbers in range, keeps a draft set elsewhere meanwhile when the user left it, restarts an
// idle model when it changes, and a variant holds only the draft settings that differ.
func TestDraftForm(t *testing.T) {
	cfg := config.Default()
	cfg.Models = map[string]config.Model{"big": {CtxSize: 4096}}
	m := Model{Model: view.Model{ModelStatus: service.ModelStatus{ID: "big"}, Meta: &catalog.Model{ContextLength: 8192}}}
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
	v := config.VariantOver(own, config.Model{Draft: "small", DraftMax: 16})
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

// The settings window over the real service: it offers the model of the same vocabulary as a draft
// and says why the other is not offered; choosing the draft raises the estimate and Apply saves it;
// a draft of another vocabulary set by hand is a problem of the form and Apply stays off, also
// once llama-server's flags arrive after the estimate (they re-check the form).
func TestDraftSettingsWindow(t *testing.T) {
	svc, _ := startService(t, "127.0.0.1:"+strconv.Itoa(testbed.FreePort(t)))
	dir := svc.Config().ModelDirs[0]
	for name, vocab := range map[string]int{"tiny-draft": 32000, "other-vocab": 512} {
		f := ggufwrite.Header(ggufwrite.HeaderOptions{Blocks: 1, Embedding: 64, FFN: 128, Heads: 4, Vocab: vocab, ContextLength: 512})
		if err := ggufwrite.WriteFile(filepath.Join(dir, name+".gguf"), f); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.Catalog().Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	svc.Engine().SyncCatalog()
	open := make(chan struct{})
	close(open)
	b := &heldFlags{serviceBackend: newServiceBackend(svc)}
	b.hold.Store(&open)
	b.estimates.Store(&open)
	u, l := newWatchedUI(t, b)
	const id = "tiny-chat"
	var w *modelSettingsWindow
	l.wait(func() { u.showModelSettings(id); w = u.modelSettings[id] })
	text := func(get func() string) string {
		var s string
		l.wait(func() { s = get() })
		return s
	}
	memory := func() string { return text(func() string { return w.memory.Text }) }
	testbed.WaitFor(t, 10*time.Second, "the estimate", func() bool { return strings.HasPrefix(memory(), "Fits: needs ") })
	before := memory()
	l.wait(func() {
		if got := strings.Join(w.draft.model.Options, ","); got != "none,tiny-draft" {
			t.Errorf("drafts offered %q", got)
		}
		if !strings.Contains(w.draft.note.Text, "other-vocab cannot draft for tiny-chat: tiny-chat has 32000 tokens and other-vocab 512") {
			t.Errorf("note %q", w.draft.note.Text)
		}
		w.draft.model.SetSelected("tiny-draft")
		w.draft.max.SetText("4")
	})
	testbed.WaitFor(t, 10*time.Second, "the estimate with the draft", func() bool { m := memory(); return strings.HasPrefix(m, "Fits: needs ") && m != before })
	shoot(t, l, w.win, "model-settings-draft")
	l.wait(func() { test.Tap(w.apply) })
	testbed.WaitFor(t, 10*time.Second, "the save", func() bool { return svc.Config().Models[id].Draft == "tiny-draft" })
	if m := svc.Config().Models[id]; m.DraftMax != 4 {
		t.Fatalf("saved %+v", m)
	}

	if err := b.EditConfig(func(c *config.Config) error {
		m := c.Models[id]
		m.Draft = "other-vocab"
		c.Models[id] = m
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	l.wait(func() { w.win.Close() })
	hold := make(chan struct{})
	b.hold.Store(&hold)
	l.wait(func() { u.showModelSettings(id); w = u.modelSettings[id] })
	refused := func() bool {
		return strings.Contains(text(func() string { return w.problems.Text }), "draft: other-vocab cannot draft for tiny-chat")
	}
	testbed.WaitFor(t, 10*time.Second, "the draft refused", refused)
	// The flags come while any new estimate would wait: the form's check of them keeps the refusal.
	estimates := make(chan struct{})
	b.estimates.Store(&estimates)
	defer close(estimates)
	close(hold)
	testbed.WaitFor(t, 30*time.Second, "llama-server's flags", func() bool {
		var known bool
		l.wait(func() { known = w.known != nil })
		return known
	})
	l.wait(func() {
		if !w.apply.Disabled() {
			t.Error("Apply enabled with a draft of another vocabulary")
		}
	})
	if !refused() {
		t.Errorf("the refusal left the screen once the flags came: %q", text(func() string { return w.problems.Text }))
	}
}
