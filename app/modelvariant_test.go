package app

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/view"
)

// On a variant the form edits the variant's own section; "Save as variant" writes what the form
// sets differently from the model's section as a new variant, and refuses a bad or taken name.
func TestModelSettingsVariants(t *testing.T) {
	gl := 10
	cfg := config.Default()
	cfg.Models = map[string]config.Model{"qwen": {CtxSize: 4096, GPULayers: &gl, Aliases: []string{"q"}, Args: []string{"--jinja"},
		Variants: map[string]config.Model{"long": {CtxSize: 8192, Aliases: []string{"ql"}}}}}
	m := Model{Model: view.Model{ModelStatus: service.ModelStatus{ID: "qwen@long"}, Meta: &catalog.Model{ContextLength: 32768}}}

	own, _ := cfg.Section("qwen@long")
	f := formFrom(own)
	if f.CtxSize != "8192" || f.GPULayers != "" || f.Aliases != "ql" || f.Args != "" {
		t.Fatalf("the form of qwen@long shows %+v, want its own section", f)
	}
	f.CtxSize, f.CacheType = "16384", "q8_0"
	out, probs := f.apply(cfg, "qwen@long", m)
	if len(probs) != 0 {
		t.Fatal(probs)
	}
	if v := out.Models["qwen"].Variants["long"]; v.CtxSize != 16384 || v.CacheType != "q8_0" || v.GPULayers != nil {
		t.Fatalf("qwen@long's section %+v", v)
	}
	if b := out.Models["qwen"]; b.CtxSize != 4096 || b.CacheType != "" || len(b.Variants) != 1 {
		t.Fatalf("qwen's section %+v changed", b)
	}
	if eff := out.ModelSettings("qwen@long"); *eff.GPULayers != 10 || eff.CtxSize != 16384 {
		t.Fatalf("qwen@long runs with %+v", eff)
	}
	f.CtxSize = "65536"
	if _, probs := f.apply(cfg, "qwen@long", m); len(probs) != 1 || probs[0].Field != "ctx_size" {
		t.Fatalf("beyond the trained context: %v", probs)
	}
	f.CtxSize, f.Aliases = "16384", "q"
	if _, probs := f.apply(cfg, "qwen@long", m); len(probs) != 1 || probs[0].Field != "aliases" || !strings.Contains(probs[0].Reason, `also an alias of "qwen"`) {
		t.Fatalf("an alias of the model: %v", probs)
	}
	// Applying the model's own form keeps its variants.
	bf := formFrom(cfg.Models["qwen"])
	bf.Parallel = "2"
	if out, probs := bf.apply(cfg, "qwen", m); len(probs) != 0 || len(out.Models["qwen"].Variants) != 1 || out.ModelSettings("qwen@long").Parallel != 2 {
		t.Fatalf("applying qwen: %v %+v", probs, out.Models["qwen"])
	}

	// Save as variant, from the model's form: only what differs is written.
	bf = formFrom(cfg.Models["qwen"])
	bf.CtxSize, bf.Args, bf.Aliases = "2048", "--jinja --temp 0.2", "q, qs"
	out, vid, probs := bf.applyAsVariant(cfg, "qwen", "short", m)
	if len(probs) != 0 || vid != "qwen@short" {
		t.Fatalf("save as variant: %v %q", probs, vid)
	}
	v := out.Models["qwen"].Variants["short"]
	if v.CtxSize != 2048 || v.GPULayers != nil || !slices.Equal(v.Args, []string{"--temp", "0.2"}) || !slices.Equal(v.Aliases, []string{"qs"}) {
		t.Fatalf("the new variant's section %+v", v)
	}
	if eff := out.ModelSettings("qwen@short"); *eff.GPULayers != 10 || !slices.Equal(eff.Args, []string{"--jinja", "--temp", "0.2"}) {
		t.Fatalf("qwen@short runs with %+v", eff)
	}
	// From a variant's form, the new variant is its model's.
	if _, vid, probs := formFrom(own).applyAsVariant(cfg, "qwen@long", "long2", m); len(probs) != 1 || vid != "" || !strings.Contains(probs[0].Reason, `alias "ql" is also an alias of "qwen@long"`) {
		t.Fatalf("a copy of qwen@long with its alias: %v %q", probs, vid)
	}
	lf := formFrom(own)
	lf.Aliases = ""
	if out, vid, probs := lf.applyAsVariant(cfg, "qwen@long", "long2", m); len(probs) != 0 || vid != "qwen@long2" || out.ModelSettings(vid).CtxSize != 8192 {
		t.Fatalf("a copy of qwen@long: %v %q", probs, vid)
	}
	for name, want := range map[string]string{"long": "already has a variant", "a b": "may hold only", "": "must not be empty"} {
		if _, _, probs := bf.applyAsVariant(cfg, "qwen", name, m); len(probs) != 1 || probs[0].Field != "variant" || !strings.Contains(probs[0].Reason, want) {
			t.Errorf("variant name %q: %v, want %q", name, probs, want)
		}
	}
}

// Over a real service: "Save as variant" from a model's settings writes the variant to the file, the
// variant becomes a model with its own settings, and its own settings window opens on its section.
func TestModelSettingsWindowSavesVariant(t *testing.T) {
	svc, cfgPath := startService(t, "127.0.0.1:"+strconv.Itoa(testbed.FreePort(t)))
	b := newServiceBackend(svc)
	u, l := newWatchedUI(t, b)
	const id = "tiny-chat"
	// The model's own settings, which its variants follow where they set nothing.
	base := b.Config()
	base.Models = map[string]config.Model{id: {CacheType: "f32", FlashAttn: "on"}}
	if err := b.EditConfig(func(c *config.Config) error { c.Models = base.Models; return nil }); err != nil {
		t.Fatal(err)
	}
	testbed.WaitFor(t, 10*time.Second, "the snapshot", func() bool {
		var ok bool
		l.wait(func() { ok = len(u.snap.Models) == 1 })
		return ok
	})
	var w *modelSettingsWindow
	l.wait(func() {
		u.showModelSettings(id)
		w = u.modelSettings[id]
		w.ctx.SetText("256")
		w.createVariant("short")
	})
	testbed.WaitFor(t, 10*time.Second, "the variant's window", func() bool {
		var ok bool
		l.wait(func() { ok = u.modelSettings[id+"@short"] != nil })
		return ok
	})
	c, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Models[id].Variants["short"]; v.CtxSize != 256 || c.Models[id].CtxSize != 0 {
		t.Fatalf("saved %+v", c.Models[id])
	}
	testbed.WaitFor(t, 10*time.Second, "the variant in the engine", func() bool {
		_, err := svc.Engine().Model(id + "@short")
		return err == nil
	})
	lctx, lcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer lcancel()
	if err := svc.Engine().Load(lctx, id+"@short"); err != nil {
		t.Fatal(err)
	}
	if st, _ := svc.Engine().Model(id + "@short"); !strings.Contains(strings.Join(st.Args, " "), "--alias tiny-chat@short -c 256") {
		t.Fatalf("tiny-chat@short runs with %q", st.Args)
	}
	if st, _ := svc.Engine().Model(id + "@short"); !strings.Contains(strings.Join(st.Args, " "), "-ctk f32 -ctv f32") {
		t.Fatalf("tiny-chat@short runs with %q, want tiny-chat's cache type", st.Args)
	}
	var vw *modelSettingsWindow
	l.wait(func() { vw = u.modelSettings[id+"@short"] })
	var ctxText, cacheHint, cacheSel, faHint, head string
	l.wait(func() {
		ctxText, cacheHint, cacheSel, faHint = vw.ctx.Text, vw.cache.Options[0], vw.cache.Selected, vw.fa.Options[0]
		head = vw.head.Text
	})
	if ctxText != "256" {
		t.Fatalf("the variant's window shows ctx %q, want its own 256", ctxText)
	}
	// Fields the variant leaves empty show the model's values.
	if want := "default (tiny-chat's: f32)"; cacheHint != want || cacheSel != want {
		t.Errorf("the variant's KV cache type offers %q, selected %q; want %q", cacheHint, cacheSel, want)
	}
	if want := "default (tiny-chat's: on)"; faHint != want {
		t.Errorf("the variant's flash attention offers %q, want %q", faHint, want)
	}
	if !strings.Contains(head, "trained context 512") {
		t.Errorf("the variant's header %q", head)
	}
	testbed.WaitFor(t, 10*time.Second, "the variant's estimate", func() bool {
		var m string
		l.wait(func() { m = vw.memory.Text })
		return strings.HasPrefix(m, "Fits: needs ")
	})
	shoot(t, l, vw.win, "model-variant")
}

// Right after "Save as variant", before the model list knows the new variant, its window shows
// the facts of its model's file: the trained context it is checked against, size and quantization.
func TestVariantWindowKnowsItsFileAtOnce(t *testing.T) {
	u, fb, l := newTestUI(t, Snapshot{Models: []Model{{Model: view.Model{ModelStatus: service.ModelStatus{ID: "qwen", State: service.StateUnloaded},
		Meta: &catalog.Model{Parameters: 7e9, Quantization: "Q4_K_M", SizeBytes: 4 << 30, ContextLength: 32768}}}}})
	fb.cfg.Models = map[string]config.Model{"qwen": {CacheType: "q8_0"}}
	var w *modelSettingsWindow
	l.wait(func() {
		u.showModelSettings("qwen")
		w = u.modelSettings["qwen"]
		w.ctx.SetText("16384")
		w.createVariant("16k")
	})
	var vw *modelSettingsWindow
	testbed.WaitFor(t, 10*time.Second, "the variant's window", func() bool {
		l.wait(func() { vw = u.modelSettings["qwen@16k"] })
		return vw != nil
	})
	if v := fb.Config().Models["qwen"].Variants["16k"]; v.CtxSize != 16384 || v.CacheType != "" {
		t.Fatalf("saved %+v", v)
	}
	l.wait(func() {
		if !strings.Contains(vw.head.Text, "7B Q4_K_M · trained context 32768") {
			t.Errorf("the new variant's header %q", vw.head.Text)
		}
		if !strings.Contains(vw.ctx.PlaceHolder, "trained context (32768)") {
			t.Errorf("the new variant's context hint %q", vw.ctx.PlaceHolder)
		}
		if vw.cache.Selected != "default (qwen's: q8_0)" {
			t.Errorf("the new variant's KV cache type %q", vw.cache.Selected)
		}
		vw.ctx.SetText("65536")
		if !strings.Contains(vw.problems.Text, "32768 tokens qwen@16k was trained on") {
			t.Errorf("a context beyond the file's: problems %q", vw.problems.Text)
		}
	})
}
