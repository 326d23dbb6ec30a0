package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const variantsFile = `
[defaults]
ctx_size = 4096
args = ["--jinja"]

[models."qwen-7b"]
aliases = ["qwen"]
gpu_layers = 20
cache_type = "q8_0"
args = ["--temp", "0.7"]
pinned = true
idle_sleep = "10m"

[models."qwen-7b".variants."32k"]
ctx_size = 32768
aliases = ["qwen-long"]
args = ["--temp", "0.2"]
load_on_start = true

[models."qwen-7b".variants.cpu]
gpu_layers = 0
flash_attn = "off"
cache_type = "f16"
parallel = 4
idle_sleep = "-1"
idle_unload = "1h"
`

// A variant's settings are its own section layered over its model's; aliases, pinned and
// load_on_start stay with the ID.
func TestVariantSettings(t *testing.T) {
	c, err := Parse("c.toml", []byte(variantsFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.VariantNames("qwen-7b"); !reflect.DeepEqual(got, []string{"32k", "cpu"}) {
		t.Fatalf("VariantNames = %v", got)
	}
	gl20, gl0 := 20, 0
	tests := []struct {
		id   string
		want Model
	}{
		{"qwen-7b", Model{Aliases: []string{"qwen"}, Args: []string{"--jinja", "--temp", "0.7"}, CtxSize: 4096, GPULayers: &gl20,
			Pinned: true, IdleSleep: ptr(Duration(10 * time.Minute)), IdleUnload: ptr(c.IdleUnload), FlashAttn: "auto", CacheType: "q8_0"}},
		{"qwen-7b@32k", Model{Aliases: []string{"qwen-long"}, Args: []string{"--jinja", "--temp", "0.7", "--temp", "0.2"}, CtxSize: 32768,
			GPULayers: &gl20, LoadOnStart: true, IdleSleep: ptr(Duration(10 * time.Minute)), IdleUnload: ptr(c.IdleUnload), FlashAttn: "auto", CacheType: "q8_0"}},
		{"qwen-7b@cpu", Model{Args: []string{"--jinja", "--temp", "0.7"}, CtxSize: 4096, GPULayers: &gl0, Parallel: 4,
			IdleSleep: ptr(Never), IdleUnload: ptr(Duration(time.Hour)), FlashAttn: "off", CacheType: "f16"}},
		// not a declared variant: a model of its own, with the defaults
		{"qwen-7b@8k", Model{Args: []string{"--jinja"}, CtxSize: 4096, IdleSleep: ptr(c.IdleSleep), IdleUnload: ptr(c.IdleUnload), FlashAttn: "auto"}},
	}
	for _, tt := range tests {
		if got := c.ModelSettings(tt.id); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ModelSettings(%s) =\n %+v\nwant\n %+v", tt.id, got, tt.want)
		}
	}
	if base, name, ok := c.Variant("qwen-7b@32k"); !ok || base != "qwen-7b" || name != "32k" {
		t.Errorf("Variant(qwen-7b@32k) = %q %q %v", base, name, ok)
	}
	for _, id := range []string{"qwen-7b", "qwen-7b@8k", "@32k", "qwen-7b@", "other@32k"} {
		if _, _, ok := c.Variant(id); ok {
			t.Errorf("Variant(%q) is a variant", id)
		}
	}
	if k := c.SectionKey("qwen-7b@cpu"); !reflect.DeepEqual(k, []string{"models", "qwen-7b", "variants", "cpu"}) {
		t.Errorf("SectionKey = %v", k)
	}
}

// Sections of variants are read and replaced without touching the model's, and the other way
// round; the configuration they came from is left as it was.
func TestVariantSections(t *testing.T) {
	c, err := Parse("c.toml", []byte(variantsFile))
	if err != nil {
		t.Fatal(err)
	}
	v, ok := c.Section("qwen-7b@32k")
	if !ok || v.CtxSize != 32768 || v.GPULayers != nil || !reflect.DeepEqual(v.Args, []string{"--temp", "0.2"}) {
		t.Fatalf("Section(qwen-7b@32k) = %+v %v", v, ok)
	}
	if b, _ := c.Section("qwen-7b"); b.Variants != nil {
		t.Fatal("a model's section came with its variants")
	}

	v.CtxSize = 16384
	d := c.WithSection("qwen-7b@32k", v)
	if d.Models["qwen-7b"].Variants["32k"].CtxSize != 16384 || c.Models["qwen-7b"].Variants["32k"].CtxSize != 32768 {
		t.Fatal("WithSection on a variant")
	}
	d = c.WithSection("qwen-7b", Model{CtxSize: 2048})
	if len(d.Models["qwen-7b"].Variants) != 2 || d.Models["qwen-7b"].CtxSize != 2048 || c.Models["qwen-7b"].CtxSize != 0 {
		t.Fatal("WithSection on a model lost its variants or changed the original")
	}
	if d.ModelSettings("qwen-7b@32k").CtxSize != 32768 || d.ModelSettings("qwen-7b@cpu").CtxSize != 2048 {
		t.Fatal("variants do not follow their model's new section")
	}

	e, err := c.WithVariant("qwen-7b", "8k", Model{CtxSize: 8192})
	if err != nil || e.ModelSettings("qwen-7b@8k").GPULayers == nil || len(c.Models["qwen-7b"].Variants) != 2 {
		t.Fatalf("WithVariant: %v", err)
	}
	if e, err := Default().WithVariant("new", "small", Model{CtxSize: 512}); err != nil || e.ModelSettings("new@small").CtxSize != 512 {
		t.Fatalf("WithVariant of a model without a section: %v", err)
	}
	for _, tt := range []struct{ base, name, want string }{
		{"qwen-7b", "32k", "already has a variant"},
		{"qwen-7b", "a/b", "may hold only"},
		{"qwen-7b@32k", "x", "is itself a variant"},
	} {
		if _, err := c.WithVariant(tt.base, tt.name, Model{}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("WithVariant(%s, %s) = %v, want %q", tt.base, tt.name, err, tt.want)
		}
	}
}

// Bad variants are refused with the key of the section that is wrong.
func TestVariantErrors(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"space in name", "[models.m.variants.\"a b\"]\nctx_size = 1\n",
			[]string{`c.toml:1: key "models.m.variants.a b": variant name "a b" may hold only letters, digits`}},
		{"at in name", "[models.m.variants.\"x@y\"]\n",
			[]string{`c.toml:1: key "models.m.variants.x@y": variant name "x@y" may hold only`}},
		{"slash in name", "[models.m.variants.\"x/y\"]\n",
			[]string{`key "models.m.variants.x/y": variant name "x/y" may hold only`}},
		{"empty name", "[models.m.variants.\"\"]\n",
			[]string{`key "models.m.variants.": a variant name must not be empty`}},
		{"dot first", "[models.m.variants.\".x\"]\n",
			[]string{`variant name ".x" must start with`}},
		{"nested variants", "[models.m.variants.a.variants.b]\nctx_size = 1\n",
			[]string{`c.toml:1: key "models.m.variants.a.variants.b": a variant cannot have variants of its own`}},
		{"section for a variant ID", "[models.m.variants.a]\n[models.\"m@a\"]\nctx_size = 5\n",
			[]string{`c.toml:2: key "models.m@a": m@a is the variant "a" of m; its settings go in [models."m".variants."a"]`}},
		{"alias is another ID", "[models.m]\n[models.m.variants.a]\naliases = [\"m\"]\n",
			[]string{`c.toml:3: key "models.m.variants.a.aliases": alias "m" is the ID of another model`}},
		{"model alias is a variant ID", "[models.n]\naliases = [\"m@a\"]\n[models.m.variants.a]\n",
			[]string{`c.toml:2: key "models.n.aliases": alias "m@a" is the ID of another model`}},
		{"alias of two", "[models.m]\naliases = [\"x\"]\n[models.m.variants.a]\naliases = [\"x\"]\n",
			[]string{`c.toml:4: key "models.m.variants.a.aliases": alias "x" is also an alias of "m"`}},
		{"bad value", "[models.m.variants.a]\nctx_size = -2\ncache_type = \"q9\"\n",
			[]string{`c.toml:2: key "models.m.variants.a.ctx_size": must not be negative (0 = the model's ctx_size)`,
				`c.toml:3: key "models.m.variants.a.cache_type": "q9" is not a KV cache type`}},
		{"reserved arg", "[models.m.variants.a]\nargs = [\"-c\", \"5\"]\n",
			[]string{`c.toml:2: key "models.m.variants.a.args": -c is set by Llamatray (from ctx_size)`}},
		{"unitless duration", "[models.m.variants.a]\nidle_unload = 60\n",
			[]string{`c.toml:2: key "models.m.variants.a.idle_unload": a duration needs a unit`}},
		{"unknown key", "[models.m.variants.a]\nctx_sise = 5\n",
			[]string{`c.toml:2: key "models.m.variants.a.ctx_sise": unknown key; did you mean "models.m.variants.a.ctx_size"?`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("c.toml", []byte(tt.text))
			if err == nil {
				t.Fatalf("accepted: %+v", c)
			}
			if !reflect.DeepEqual(c, Config{}) {
				t.Errorf("a refused file gave a configuration: %+v", c)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("error %d = %q, want it to contain %q", i, lines[i], w)
				}
			}
		})
	}
}

// Variants are written back to the file and read again as they were.
func TestVariantsRoundTrip(t *testing.T) {
	c, err := Parse("c.toml", []byte(variantsFile))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "\n[models.\"qwen-7b\".variants.\"32k\"]\naliases = [\"qwen-long\"]\nctx_size = 32768\n") {
		t.Errorf("the variant is not written as its own table:\n%s", text)
	}
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, d) {
		t.Errorf("round trip:\n%+v\n%+v", c, d)
	}
	if _, err := Parse("default", []byte(DefaultFileText())); err != nil {
		t.Errorf("the default file (with its commented variant example): %v", err)
	}
}
