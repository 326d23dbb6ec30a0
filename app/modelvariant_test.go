package app

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed"
)

// On a variant the form edits the variant's own section; "Save as variant" writes what the form
// sets differently from the model's section as a new variant, and refuses a bad or taken name.
func TestModelSettingsVariants(t *testing.T) {
	gl := 10
	cfg := config.Default()
	cfg.Models = map[string]config.Model{"qwen": {CtxSize: 4096, GPULayers: &gl, Aliases: []string{"q"}, Args: []string{"--jinja"},
		Variants: map[string]config.Model{"long": {CtxSize: 8192, Aliases: []string{"ql"}}}}}
	m := Model{ModelStatus: engine.ModelStatus{ID: "qwen@long"}, ContextLength: 32768}

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
	b := &serviceBackend{svc: svc, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	u, l := newTestUIWith(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { u.watch(ctx); close(watched) }()
	defer func() { cancel(); <-watched }()
	const id = "tiny-chat"
	waitFor(t, "the snapshot", func() bool {
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
	waitFor(t, "the variant's window", func() bool {
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
	var vw *modelSettingsWindow
	l.wait(func() { vw = u.modelSettings[id+"@short"] })
	var ctxText string
	l.wait(func() { ctxText = vw.ctx.Text })
	if ctxText != "256" {
		t.Fatalf("the variant's window shows ctx %q, want its own 256", ctxText)
	}
	shoot(t, l, vw.win, "model-settings-variant")
}
