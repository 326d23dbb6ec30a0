package app

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/fit"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/view"
)

// The form is checked against the model and the configuration before anything is saved.
func TestModelSettingsValidation(t *testing.T) {
	cfg := config.Default()
	cfg.Models = map[string]config.Model{"other": {Aliases: []string{"taken"}}, "qwen": {Hidden: true, Tags: []string{"chat"}}}
	m := Model{Model: view.Model{ModelStatus: service.ModelStatus{ID: "qwen"}, Meta: &catalog.Model{ContextLength: 8192}}}
	good := modelForm{CtxSize: "8192", GPULayers: "-1", Parallel: "2", CacheType: "q8_0", FlashAttn: "on",
		Args: "--jinja  --temp 0.7", Aliases: "q, qw ", IdleSleep: "10m", IdleUnload: "-1", Pinned: true}
	out, probs := good.apply(cfg, "qwen", m)
	if len(probs) != 0 {
		t.Fatalf("a good form: %v", probs)
	}
	sec := out.Models["qwen"]
	if sec.CtxSize != 8192 || *sec.GPULayers != -1 || sec.Parallel != 2 || sec.CacheType != "q8_0" || sec.FlashAttn != "on" ||
		!slices.Equal(sec.Args, []string{"--jinja", "--temp", "0.7"}) || !slices.Equal(sec.Aliases, []string{"q", "qw"}) ||
		sec.IdleSleep.String() != "10m" || *sec.IdleUnload != config.Never || !sec.Pinned || !sec.Hidden ||
		!slices.Equal(sec.Tags, []string{"chat"}) {
		t.Fatalf("section %+v", sec)
	}
	if _, ok := cfg.Models["qwen"]; !ok || cfg.Models["qwen"].CtxSize != 0 {
		t.Fatal("apply changed the configuration it was given")
	}
	if got := formFrom(sec); got != good {
		// The form shows what it saved, normalized.
		if got.Args != "--jinja --temp 0.7" || got.Aliases != "q, qw" || got.CtxSize != "8192" {
			t.Fatalf("form from the section %+v", got)
		}
	}

	for _, tc := range []struct {
		name  string
		edit  func(*modelForm)
		field string
		want  string
	}{
		{"beyond the trained context", func(f *modelForm) { f.CtxSize = "16384" }, "ctx_size", "8192 tokens qwen was trained on"},
		{"not a number", func(f *modelForm) { f.CtxSize = "big" }, "ctx_size", "not a whole number"},
		{"gpu layers below -1", func(f *modelForm) { f.GPULayers = "-2" }, "gpu_layers", "-1 or more"},
		{"negative slots", func(f *modelForm) { f.Parallel = "-1" }, "parallel", "0 or more"},
		{"quantized cache without flash attention", func(f *modelForm) { f.FlashAttn = "off" }, "cache_type", "needs flash attention"},
		{"a flag Llamatray sets", func(f *modelForm) { f.Args = "-c 4096" }, "args", "set by Llamatray"},
		{"an alias of another model", func(f *modelForm) { f.Aliases = "taken" }, "aliases", "also an alias of"},
		{"a bad timer", func(f *modelForm) { f.IdleSleep = "soon" }, "idle_sleep", "not a duration"},
	} {
		f := good
		tc.edit(&f)
		_, probs := f.apply(cfg, "qwen", m)
		if len(probs) != 1 || probs[0].Field != tc.field || !strings.Contains(probs[0].Reason, tc.want) {
			t.Errorf("%s: problems %v, want one on %s saying %q", tc.name, probs, tc.field, tc.want)
		}
	}

	// Empty fields are the defaults; an unknown trained context allows any size.
	out, probs = modelForm{CtxSize: "100000"}.apply(cfg, "new", Model{Model: view.Model{ModelStatus: service.ModelStatus{ID: "new"}}})
	if len(probs) != 0 || out.Models["new"].GPULayers != nil || out.ModelSettings("new").FlashAttn != "auto" {
		t.Fatalf("defaults: %v %+v", probs, out.Models["new"])
	}

	// Extra arguments are checked against the flags llama-server lists; values are not flags.
	known := map[string]bool{"--jinja": true, "--temp": true, "-t": true}
	if p := unknownFlags("--jinja --temp 0.7 -t 4 --override-kv x=-1 --rope-scale -0.5", known); len(p) != 2 || !strings.Contains(p[0].Reason, "no flag --override-kv") || !strings.Contains(p[1].Reason, "no flag --rope-scale") {
		t.Errorf("unknown flags %v", p)
	}

	// What applying does.
	if !needsRestart(cfg, out, "new") || needsRestart(cfg, cfg, "qwen") {
		t.Error("needsRestart")
	}
	pinOnly := cfg
	pinOnly.Models = map[string]config.Model{"qwen": {Pinned: true, Aliases: []string{"x"}}}
	if needsRestart(cfg, pinOnly, "qwen") {
		t.Error("a pin or an alias restarts the model")
	}
	idle := Model{Model: view.Model{ModelStatus: service.ModelStatus{ID: "qwen", State: service.StateLoaded}}}
	busy := idle
	busy.Active = 1
	if r, note := applyPlan(idle); !r || !strings.Contains(note, "restarting") {
		t.Errorf("idle: %v %q", r, note)
	}
	if r, note := applyPlan(busy); r || !strings.Contains(note, "next load") {
		t.Errorf("busy: %v %q", r, note)
	}
	if r, _ := applyPlan(Model{Model: view.Model{ModelStatus: service.ModelStatus{State: service.StateUnloaded}}}); r {
		t.Error("an unloaded model restarts")
	}
	if line, f := fitLine(3<<30, false, fit.Room{Limit: 4 << 30, Free: 1 << 30}, 2<<30); f != fit.Now || !strings.HasPrefix(line, "Fits: needs 3") {
		t.Errorf("the model's own memory is not counted as freed: %q", line)
	}
}

// The settings window over a real service and the fake llama-server: the memory need follows the
// form, a context beyond the trained one is refused, and applying to the idle loaded model writes
// its section and restarts it with the new flags.
func TestModelSettingsWindowRestartsIdleModel(t *testing.T) {
	svc, cfgPath := startService(t, "127.0.0.1:"+strconv.Itoa(testbed.FreePort(t)))
	b := newServiceBackend(svc)
	u, l := newWatchedUI(t, b)
	const id = "tiny-chat"
	lctx, lcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer lcancel()
	if err := svc.Engine().Load(lctx, id); err != nil {
		t.Fatal(err)
	}
	firstPID := b.Snapshot().Models[0].PID
	testbed.WaitFor(t, 10*time.Second, "the snapshot", func() bool {
		var ok bool
		l.wait(func() { ok = len(u.snap.Models) == 1 && u.snap.Models[0].State == service.StateLoaded })
		return ok
	})

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

	// The fake llama-server's --help lists its flags, as the real one's does.
	l.wait(func() { w.args.SetText("--jinja --no-such-flag") })
	testbed.WaitFor(t, 10*time.Second, "the unknown flag", func() bool {
		return strings.Contains(text(func() string { return w.problems.Text }), "llama-server has no flag --no-such-flag")
	})
	l.wait(func() { w.args.SetText("--jinja") })
	l.wait(func() { w.ctx.SetText("4096") }) // trained on 512
	if p := text(func() string { return w.problems.Text }); !strings.Contains(p, "512 tokens tiny-chat was trained on") {
		t.Fatalf("problems %q", p)
	}
	shoot(t, l, w.win, "model-settings-invalid")
	l.wait(func() {
		if !w.apply.Disabled() {
			t.Error("Apply enabled with a problem")
		}
		w.ctx.SetText("256")
		w.cache.SetSelected("q8_0")
		w.parallel.SetText("2")
	})
	// tiny-chat's heads are 16 values wide: no whole q8_0 block, which llama-server refuses.
	testbed.WaitFor(t, 10*time.Second, "the cache type refused", func() bool {
		return strings.Contains(text(func() string { return w.problems.Text }), "cache_type: a q8_0 cache stores blocks of 32")
	})
	l.wait(func() {
		if !w.apply.Disabled() {
			t.Error("Apply enabled for a cache type the model cannot take")
		}
		w.cache.SetSelected("f32")
	})
	testbed.WaitFor(t, 10*time.Second, "the new estimate", func() bool { m := memory(); return strings.HasPrefix(m, "Fits: needs ") && m != before })
	shoot(t, l, w.win, "model-settings")
	l.wait(func() { test.Tap(w.apply) })
	testbed.WaitFor(t, 10*time.Second, "the restart", func() bool {
		return strings.Contains(text(func() string { return w.result.Text }), "restarting with the new settings")
	})
	testbed.WaitFor(t, 10*time.Second, "the model with its new flags", func() bool {
		st, err := svc.Engine().Model(id)
		return err == nil && st.State == service.StateLoaded && st.PID != firstPID &&
			strings.Contains(strings.Join(st.Args, " "), "-ctk f32 -ctv f32") && strings.Contains(strings.Join(st.Args, " "), "-np 2")
	})
	c, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if sec := c.Models[id]; sec.CtxSize != 256 || sec.CacheType != "f32" || sec.Parallel != 2 || !slices.Equal(sec.Args, []string{"--jinja"}) {
		t.Fatalf("saved section %+v", sec)
	}
	shoot(t, l, w.win, "model-settings-applied")
}
