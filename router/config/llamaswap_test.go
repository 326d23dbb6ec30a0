package config

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// llama-swap's models that run llama-server become the models of their files, with the settings
// Llamatray has; what cannot be carried over is listed with why.
func TestImportLlamaSwap(t *testing.T) {
	data, err := os.ReadFile("testdata/llama-swap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	before := Default()
	c, skipped, err := before.ImportLlamaSwap("llama-swap.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	l := c.Models["Llama-3.2-3B-Q4_K_M"]
	if l.CtxSize != 8192 || *l.GPULayers != 99 || !slices.Equal(l.Args, []string{"--jinja", "--temp", "0.7"}) ||
		!slices.Equal(l.Aliases, []string{"gpt-3.5-turbo", "gpt-4o-mini", "llama"}) || *l.IdleUnload != Duration(time.Minute) ||
		!slices.Equal(l.StripParams, []string{"temperature", "top_p"}) || !l.LoadOnStart {
		t.Errorf("llama: %+v", l)
	}
	q := c.Models["Qwen2.5 Coder 7B"]
	if q.CtxSize != 16384 || q.FlashAttn != "on" || q.Parallel != 2 || !q.Hidden || !q.Pinned || q.Args != nil || !slices.Equal(q.Aliases, []string{"qwen-coder"}) {
		t.Errorf("qwen-coder: %+v", q)
	}
	if !slices.Equal(c.ModelDirs, []string{"/models/Llama-3.2-3B-Q4_K_M.gguf", "/models/Qwen2.5 Coder 7B.gguf"}) || len(c.Models) != 2 ||
		c.IdleUnload != Duration(15*time.Minute) || c.LoadTimeout != Duration(2*time.Minute) {
		t.Errorf("config: %v %v %v %v", c.ModelDirs, len(c.Models), c.IdleUnload, c.LoadTimeout)
	}
	all := strings.Join(skipped, "\n")
	for _, want := range []string{"model hub-model: its cmd names no GGUF file", "model vllm: its cmd runs docker, not llama-server",
		"model qwen-coder: --rpc is not carried over", "model qwen-coder: env is not carried over", "model qwen-coder: proxy is not carried over",
		"group always: not needed", "startPort: not carried over", "logLevel: not carried over"} {
		if !strings.Contains(all, want) {
			t.Errorf("not listed: %q in\n%s", want, all)
		}
	}
	if before.Models != nil || before.ModelDirs != nil {
		t.Error("the configuration imported into was changed")
	}
	path := t.TempDir() + "/c.toml"
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	if back, err := Load(path); err != nil || !slices.Equal(back.Models["Qwen2.5 Coder 7B"].Aliases, q.Aliases) {
		t.Fatalf("saved: %v", err)
	}
}

// A file that does not read changes nothing and says why.
func TestImportLlamaSwapInvalid(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"models: [", "yaml"},
		{"models: {}\n", "no models"},
		{"models:\n  a:\n    cmd: llama-server -m /m/a.gguf ${nope}\n", "unknown macro ${nope}"},
		{"models:\n  a:\n    cmd: llama-server -m '/m/a.gguf\n", "a quote is not closed"},
		{"models:\n  a:\n    cmd: llama-server -m /m/a.gguf\ngroups:\n  g:\n    members: [b]\n", `no model "b"`},
		{"models:\n  a:\n    cmd: llama-server -m /m/a.gguf -c -5\n", "would not be a valid configuration"},
		{"models:\n  a:\n    cmd: llama-server -m /m/a.gguf -c big\n", `-c "big": not a whole number`},
	} {
		before := Default()
		got, _, err := before.ImportLlamaSwap("s.yaml", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
		if got.Models != nil || got.ModelDirs != nil {
			t.Errorf("%q: changed %+v", c.text, got.Models)
		}
	}
}
