package config

import (
	"reflect"
	"strings"
	"testing"
)

const rulesFile = `
[models."m"]
draft = "small"
draft_gpu_layers = -1
draft_max = 16
set_params = { temperature = 0.2, stop = ["</s>", "###"], response_format = { type = "json_object" }, "odd key" = 1.0 }
strip_params = ["logit_bias"]
default_params = { top_k = 40, min_p = 0.05 }

[models."m".variants."hot"]
set_params = { temperature = 1.5 }
strip_params = ["seed", "logit_bias"]
draft_max = 4
`

func TestRulesRoundTrip(t *testing.T) {
	c, err := Parse("test.toml", []byte(rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	text, err := c.render()
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("again.toml", []byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if !reflect.DeepEqual(c.Models, again.Models) {
		t.Fatalf("changed by a save:\n%#v\n%#v\n%s", c.Models, again.Models, text)
	}
	if v := again.Models["m"].SetParams["odd key"]; v != 1.0 {
		t.Fatalf("a float written as 1 must stay a float, got %#v", v)
	}
}

func TestRulesLayeredAndSettings(t *testing.T) {
	c, err := Parse("test.toml", []byte(rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	s := c.ModelSettings("m@hot")
	if s.SetParams["temperature"] != 1.5 || s.SetParams["stop"] == nil {
		t.Errorf("variant set_params = %#v, want its temperature over its model's fields", s.SetParams)
	}
	if !reflect.DeepEqual(s.StripParams, []string{"logit_bias", "seed"}) {
		t.Errorf("variant strip_params = %v", s.StripParams)
	}
	if s.Draft != "small" || s.DraftMax != 4 || s.DraftGPULayers == nil || *s.DraftGPULayers != -1 {
		t.Errorf("variant draft = %q max %d layers %v", s.Draft, s.DraftMax, s.DraftGPULayers)
	}
	if s.DefaultParams["top_k"] != int64(40) {
		t.Errorf("default_params = %#v", s.DefaultParams)
	}
	s.SetParams["stop"].([]any)[0] = "changed"
	if c.Models["m"].SetParams["stop"].([]any)[0] != "</s>" {
		t.Error("ModelSettings shares memory with the configuration")
	}
	if cl := c.Clone(); true {
		cl.Models["m"].SetParams["response_format"].(map[string]any)["type"] = "text"
		if c.Models["m"].SetParams["response_format"].(map[string]any)["type"] != "json_object" {
			t.Error("Clone shares a rule's table")
		}
	}
}

func TestRulesRefused(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`[models."m"]` + "\nset_params = { model = \"x\" }", `"model" is set by the request`},
		{`[models."m"]` + "\nstrip_params = [\"stream\"]", `"stream" is set by the request`},
		{`[models."m"]` + "\ndefault_params = { when = 1979-05-27T07:32:00Z }", "cannot be sent as JSON"},
		{`[models."m"]` + "\ndraft_max = -2", "must not be negative"},
	} {
		_, err := Parse("bad.toml", []byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.text, err, tc.want)
		}
	}
}

func TestUpdateCheckDefault(t *testing.T) {
	c, err := Parse("empty.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.UpdateCheck || c.UpdatePrerelease {
		t.Fatalf("update_check %v, update_prerelease %v; want on and off", c.UpdateCheck, c.UpdatePrerelease)
	}
}
