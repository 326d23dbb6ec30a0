package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The preset file llama.cpp's router was recorded with (router/testbed/testdata/llamacpp-router)
// reads as the same models: [*]'s ctx-size for every model, alpha's aliases and tags, gamma the
// model of its file answering to its section's name.
func TestPresetsOfLlamaCppRouter(t *testing.T) {
	data, err := os.ReadFile("../testbed/testdata/llamacpp-router/preset.ini")
	if err != nil {
		t.Fatal(err)
	}
	known := func(f string) bool { return f == "--jinja" || f == "--no-jinja" || f == "--cache-type-k" }
	p, err := ParsePresets("/models/preset.ini", data, known)
	if err != nil {
		t.Fatal(err)
	}
	c := Default().WithPresets(p)
	c.Models = map[string]Model{"alpha": {CtxSize: 1024, Aliases: []string{"mine"}}}
	if a := c.ModelSettings("alpha"); a.CtxSize != 1024 || !slices.Equal(a.Aliases, []string{"first", "primo", "mine"}) || !slices.Equal(a.Tags, []string{"chat", "tiny"}) {
		t.Errorf("alpha: %+v", a)
	}
	// gamma's file is beta's: the model found on disk answers to gamma's names too, with [*]'s settings
	if b := c.ModelSettings("beta"); b.CtxSize != 512 || !slices.Equal(b.Aliases, []string{"gamma", "g"}) {
		t.Errorf("beta: %+v", b)
	}
	if beta := filepath.Clean("/models/beta.gguf"); !slices.Contains(p.Files, beta) || !slices.Contains(c.ModelDirsResolved(), beta) {
		t.Errorf("gamma's file: %v", p.Files)
	}
	if strings.Contains(mustRender(t, c), "primo") {
		t.Error("the presets were written into the configuration file")
	}
}

func mustRender(t *testing.T, c Config) string {
	t.Helper()
	s, err := c.render()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Keys become settings or llama-server arguments; a key llama-server does not take, one Llamatray
// sets, a bad value or a syntax error is refused naming its line.
func TestPresetKeys(t *testing.T) {
	known := func(f string) bool {
		return f == "--jinja" || f == "--no-mmap" || f == "--mmap" || f == "--cache-type-k"
	}
	p, err := ParsePresets("p.ini", []byte("; comment\n[m]\nn-gpu-layers = all\nflash-attn = on\nparallel = 2\njinja = true\nmmap = false\ncache-type-k = q8_0\nload-on-startup = true\nstop-timeout = 5\n"), known)
	if err != nil {
		t.Fatal(err)
	}
	m := p.Models["m"]
	if *m.GPULayers != -1 || m.FlashAttn != "on" || m.Parallel != 2 || !m.LoadOnStart ||
		!slices.Equal(m.Args, []string{"--jinja", "--no-mmap", "--cache-type-k", "q8_0"}) || len(p.Ignored) != 1 {
		t.Fatalf("%+v %v", m, p.Ignored)
	}
	for _, c := range []struct{ text, want string }{
		{"[m]\n\nctx-sise = 4\n", `p.ini:3: key "ctx-sise": not an argument llama-server takes`},
		{"[m]\nport = 9\n", `p.ini:2: key "port": set by Llamatray (from listen)`},
		{"[m]\nctx-size = big\n", `p.ini:2: key "ctx-size": "big" is not a whole number`},
		{"[m\n", `p.ini:1: "[m" is not a section header`},
		{"x = 1\n", `p.ini:1: key "x": a key before the first [section]`},
		{"[m]\nflash-attn = maybe\n", `p.ini:1: key "flash_attn": "maybe" is not allowed`},
		{"[m]\nmmap = false\njinja = false\n", `p.ini:3: key "jinja": llama-server has no --no-jinja`},
	} {
		known := known
		if strings.Contains(c.text, "jinja = false") {
			known = func(f string) bool { return f == "--jinja" || f == "--mmap" || f == "--no-mmap" }
		}
		if _, err := ParsePresets("p.ini", []byte(c.text), known); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %s", c.text, err, c.want)
		}
	}
}

// PresetChanged tells a preset file written again from the one read.
func TestPresetChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.ini")
	if err := os.WriteFile(path, []byte("[m]\nctx-size = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.Presets = path
	c, err := ReadPresetsOf(c)
	if err != nil || c.LoadedPresets() == nil || c.PresetChanged() {
		t.Fatalf("%v %v", err, c.PresetChanged())
	}
	if err := os.WriteFile(path, []byte("[m]\nctx-size = 12\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !c.PresetChanged() {
		t.Fatal("a longer file reads as unchanged")
	}
}
