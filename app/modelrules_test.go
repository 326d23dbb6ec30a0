package app

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
)

// The rules' text is checked before anything is saved: JSON objects of values TOML can hold,
// names a rule may change.
func TestRulesFormApply(t *testing.T) {
	cfg := config.Default()
	cfg.Models = map[string]config.Model{"m": {CtxSize: 1024, Variants: map[string]config.Model{"v": {}}}}
	for _, tt := range []struct {
		name    string
		f       rulesForm
		problem string // "" = none
		want    config.Model
	}{
		{"all three", rulesForm{Set: ` {"temperature": 0.2, "n_predict": 3, "stop": ["</s>"], "response_format": {"type": "json_object"}, "cache_prompt": false}`,
			Strip: "logit_bias,  seed, ,seed", Defaults: `{"top_k": 40, "min_p": 5e-2}`}, "",
			config.Model{CtxSize: 1024, SetParams: map[string]any{"temperature": 0.2, "n_predict": int64(3), "stop": []any{"</s>"},
				"response_format": map[string]any{"type": "json_object"}, "cache_prompt": false},
				StripParams: []string{"logit_bias", "seed"}, DefaultParams: map[string]any{"top_k": int64(40), "min_p": 0.05}}},
		{"empty clears", rulesForm{Set: "  ", Defaults: "{}"}, "", config.Model{CtxSize: 1024}},
		{"float kept a float", rulesForm{Set: `{"temperature": 1.0}`}, "", config.Model{CtxSize: 1024, SetParams: map[string]any{"temperature": 1.0}}},
		{"not JSON", rulesForm{Set: `{temperature: 1}`}, "set_params: not JSON", config.Model{}},
		{"not an object", rulesForm{Defaults: `[1, 2]`}, "default_params: must be a JSON object", config.Model{}},
		{"two objects", rulesForm{Set: `{"a": 1} {"b": 2}`}, "set_params: one JSON object only", config.Model{}},
		{"null", rulesForm{Set: `{"a": {"b": [1, null]}}`}, "set_params: a.b[1]: null cannot be saved", config.Model{}},
		{"reserved name", rulesForm{Set: `{"stream": false}`}, `set_params: "stream" is set by the request and Llamatray`, config.Model{}},
		{"reserved strip", rulesForm{Strip: "messages"}, `strip_params: "messages" is set by the request`, config.Model{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, probs := tt.f.apply(cfg, "m")
			if tt.problem != "" {
				if len(probs) != 1 || !strings.HasPrefix(probs[0].String(), tt.problem) {
					t.Fatalf("problems %v, want one starting %q", probs, tt.problem)
				}
				if !reflect.DeepEqual(out, cfg) {
					t.Error("the configuration changed despite a problem")
				}
				return
			}
			if len(probs) > 0 {
				t.Fatalf("problems %v", probs)
			}
			got := out.Models["m"]
			if got.Variants == nil {
				t.Error("the model lost its variants")
			}
			got.Variants = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("section\n %#v\nwant\n %#v", got, tt.want)
			}
			if again := rulesFormFrom(got); again != rulesFormFrom(tt.want) {
				t.Errorf("shown again as %+v", again)
			}
		})
	}
	// A variant's rules go in its own section, layered over its model's.
	withModel, _ := rulesForm{Set: `{"temperature": 0.2, "seed": 1}`}.apply(cfg, "m")
	out, probs := rulesForm{Set: `{"temperature": 1.5}`}.apply(withModel, "m@v")
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	if v := out.Models["m"].Variants["v"].SetParams; !reflect.DeepEqual(v, map[string]any{"temperature": 1.5}) {
		t.Errorf("variant's own set_params %v", v)
	}
	if eff := out.ModelSettings("m@v").SetParams; eff["temperature"] != 1.5 || eff["seed"] != int64(1) {
		t.Errorf("variant's rules in force %v", eff)
	}
}

// The settings window over a real service and the fake llama-server: the rules typed are checked,
// saved through the service, and the next request gets them (max_tokens forced to 2, so the fake
// llama-server stops after two tokens); the settings form's own Apply keeps them.
func TestModelRulesWindow(t *testing.T) {
	svc, cfgPath := startService(t, "127.0.0.1:"+strconv.Itoa(testbed.FreePort(t)))
	b := newServiceBackend(svc)
	u, l := newWatchedUI(t, b)
	const id = "tiny-chat"
	var w *modelSettingsWindow
	l.wait(func() { u.showModelSettings(id); w = u.modelSettings[id] })
	text := func(get func() string) string {
		var s string
		l.wait(func() { s = get() })
		return s
	}
	r := w.rules
	l.wait(func() { r.set.SetText(`{"max_tokens": 2, "model": "x"}`) })
	if p := text(func() string { return r.problems.Text }); !strings.Contains(p, `"model" is set by the request and Llamatray`) {
		t.Fatalf("problems %q", p)
	}
	l.wait(func() {
		if !r.save.Disabled() {
			t.Error("Save rules enabled with a problem")
		}
		r.set.SetText(`{"max_tokens": 2}`)
		r.strip.SetText("seed")
		r.defaults.SetText(`{"top_k": 40}`)
	})
	shoot(t, l, w.win, "model-settings-rules")
	l.wait(func() { test.Tap(r.save) })
	testbed.WaitFor(t, 10*time.Second, "the rules saved", func() bool { return strings.HasPrefix(text(func() string { return r.result.Text }), "Saved") })
	c, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	want := config.Model{SetParams: map[string]any{"max_tokens": int64(2)}, StripParams: []string{"seed"}, DefaultParams: map[string]any{"top_k": int64(40)}}
	if sec := c.Models[id]; !reflect.DeepEqual(sec, want) {
		t.Fatalf("saved section %#v", sec)
	}

	tokens := func() float64 {
		t.Helper()
		resp, err := http.Post("http://"+svc.ListenAddr()+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"tiny-chat","max_tokens":6,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc struct {
			Usage struct {
				CompletionTokens float64 `json:"completion_tokens"`
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%d %v", resp.StatusCode, err)
		}
		return doc.Usage.CompletionTokens
	}
	if n := tokens(); n != 2 {
		t.Errorf("completion_tokens %v, want 2 (set_params max_tokens)", n)
	}

	// The form's Apply writes the rest of the section and keeps the rules.
	l.wait(func() { w.parallel.SetText("2") })
	testbed.WaitFor(t, 10*time.Second, "Apply enabled", func() bool {
		var ok bool
		l.wait(func() { ok = !w.apply.Disabled() })
		return ok
	})
	l.wait(func() { test.Tap(w.apply) })
	testbed.WaitFor(t, 10*time.Second, "the settings saved", func() bool {
		c, err := config.Load(cfgPath)
		return err == nil && c.Models[id].Parallel == 2
	})
	c, _ = config.Load(cfgPath)
	if sec := c.Models[id]; !reflect.DeepEqual(sec.SetParams, want.SetParams) || !reflect.DeepEqual(sec.StripParams, want.StripParams) {
		t.Errorf("the form's Apply lost the rules: %#v", sec)
	}

	// Cleared, the next request is the client's own again.
	l.wait(func() { r.set.SetText(""); test.Tap(r.save) })
	// Tapped, the result says "Saving…" until EditConfig returned: saved and in force.
	testbed.WaitFor(t, 10*time.Second, "the rules cleared", func() bool { return strings.HasPrefix(text(func() string { return r.result.Text }), "Saved") })
	if c, err := config.Load(cfgPath); err != nil || c.Models[id].SetParams != nil {
		t.Fatalf("cleared rules saved as %#v, %v", c.Models[id], err)
	}
	if n := tokens(); n != 6 {
		t.Errorf("completion_tokens %v after clearing, want the request's 6", n)
	}
}
