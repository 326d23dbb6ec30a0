package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const renamedFile = `
default_model = "tiny-llama-Q8_0"

[models."tiny-llama-Q8_0"]
aliases = ["tiny"]
pinned = true
ctx_size = 1024

[models."tiny-llama-Q8_0".variants.long]
ctx_size = 8192

[models.big]
draft = "tiny-llama-Q8_0"

[models.big.variants.fast]
draft = "tiny-llama-Q8_0"
`

// Settings written under a model's file-name ID apply under its Hub name, and a save writes them
// there: one section for the model, no section left under the old key.
func TestRenamedMovesSettings(t *testing.T) {
	cfg, err := Parse("config.toml", []byte(renamedFile))
	if err != nil {
		t.Fatal(err)
	}
	before := cfg.Clone()
	ren := map[string]string{"Org/Tiny-GGUF:Q8_0": "tiny-llama-Q8_0"}
	out, changed := cfg.Renamed(ren)
	if !changed {
		t.Fatal("nothing moved")
	}
	if !reflect.DeepEqual(cfg, before) {
		t.Error("Renamed changed its receiver")
	}
	ms := out.ModelSettings("Org/Tiny-GGUF:Q8_0")
	if !ms.Pinned || ms.CtxSize != 1024 || !reflect.DeepEqual(ms.Aliases, []string{"tiny"}) {
		t.Errorf("settings under the new ID: %+v", ms)
	}
	if v := out.ModelSettings("Org/Tiny-GGUF:Q8_0@long"); v.CtxSize != 8192 {
		t.Errorf("the variant's settings: %+v", v)
	}
	if _, ok := out.Models["tiny-llama-Q8_0"]; ok {
		t.Error("the old section is still there")
	}
	if out.DefaultModel != "Org/Tiny-GGUF:Q8_0" || out.ModelSettings("big").Draft != "Org/Tiny-GGUF:Q8_0" || out.ModelSettings("big@fast").Draft != "Org/Tiny-GGUF:Q8_0" {
		t.Errorf("default %q, draft %q, variant's draft %q", out.DefaultModel, out.ModelSettings("big").Draft, out.ModelSettings("big@fast").Draft)
	}
	if again, changed := out.Renamed(ren); changed || !reflect.DeepEqual(again, out) {
		t.Error("a second rename changed something")
	}

	path := filepath.Join(t.TempDir(), "config.toml")
	if err := out.Save(path); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(path)
	if strings.Contains(string(text), `[models.tiny-llama-Q8_0`) || strings.Contains(string(text), `"tiny-llama-Q8_0"`) {
		t.Errorf("the saved file still names the old ID:\n%s", text)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Models) != 2 || !back.ModelSettings("Org/Tiny-GGUF:Q8_0").Pinned {
		t.Errorf("reloaded: %v", back.Models)
	}
}

// When the new ID has a section already, it counts; the old one is left as it is.
func TestRenamedKeepsAnExistingSection(t *testing.T) {
	cfg, err := Parse("config.toml", []byte(renamedFile+"\n[models.\"Org/Tiny-GGUF:Q8_0\"]\nctx_size = 2048\n"))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := cfg.Renamed(map[string]string{"Org/Tiny-GGUF:Q8_0": "tiny-llama-Q8_0"})
	if ms := out.ModelSettings("Org/Tiny-GGUF:Q8_0"); ms.CtxSize != 2048 || ms.Pinned {
		t.Errorf("the new section lost: %+v", ms)
	}
	if _, ok := out.Models["tiny-llama-Q8_0"]; !ok {
		t.Error("the old section was dropped")
	}
	if _, changed := out.Renamed(nil); changed {
		t.Error("no rename changed something")
	}
}
