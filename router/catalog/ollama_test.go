package catalog

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

func TestOllamaStore(t *testing.T) {
	s := newTestStore(t, filepath.Join(t.TempDir(), "models"))
	llama := s.model(ggufwrite.HeaderOptions{Name: "Llama 3.2 3B", FileType: 15, ContextLength: 8192})
	tmpl := s.text(mediaTemplate, "{{ .Prompt }}")
	params := s.text(mediaParams, `{"stop":["<|eot_id|>"],"temperature":0.6,"num_ctx":8192}`)
	license := s.text("application/vnd.ollama.image.license", "LICENSE")
	m3b := s.manifest("registry.ollama.ai/library/llama3.2/3b", llama, license, tmpl, params)
	mLatest := s.manifest("registry.ollama.ai/library/llama3.2/latest", llama, license, tmpl, params)
	// ollama create mycoder, FROM llama3.2:3b with a system prompt and a temperature of its own
	mCoder := s.manifest("registry.ollama.ai/library/mycoder/latest", llama, tmpl,
		s.text(mediaSystem, "You write Go."), s.text(mediaParams, `{"temperature":0.2}`))
	user := s.model(ggufwrite.HeaderOptions{Name: "user model"})
	s.manifest("registry.ollama.ai/user/m/latest", user)
	hub := s.model(ggufwrite.HeaderOptions{Name: "from the Hub", FileType: 15})
	s.manifest("hf.co/bartowski/Some-Model-GGUF/Q4_K_M", hub, tmpl)
	llava := s.model(ggufwrite.HeaderOptions{Name: "llava"})
	proj := s.projector(64)
	s.manifest("registry.ollama.ai/library/llava/7b", llava, proj)
	writeModel(t, filepath.Join(s.dir, "mine", "extra.gguf"), ggufwrite.HeaderOptions{}) // beside the store, found by name
	before := treeState(t, s.dir)

	c, _ := newCatalog(t, Options{Dirs: []string{s.dir}, Variants: func() map[string][]string {
		return map[string][]string{"llama3.2:3b": {"fast"}}
	}})
	if w := c.Warnings(); len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
	want := []string{"extra", "hf.co/bartowski/Some-Model-GGUF:Q4_K_M", "llama3.2:3b", "llama3.2:3b@fast", "llava:7b", "user/m:latest"}
	if got := ids(c.Models()); !reflect.DeepEqual(got, want) {
		t.Fatalf("IDs = %v, want %v", got, want)
	}
	for name, id := range map[string]string{
		"llama3.2:3b": "llama3.2:3b", "llama3.2:latest": "llama3.2:3b", "llama3.2": "llama3.2:3b", "LLAMA3.2:3B": "llama3.2:3b",
		"mycoder": "llama3.2:3b", "mycoder:latest": "llama3.2:3b",
		"user/m:latest": "user/m:latest", "user/m": "user/m:latest",
		"hf.co/bartowski/Some-Model-GGUF:Q4_K_M": "hf.co/bartowski/Some-Model-GGUF:Q4_K_M", "hf.co/bartowski/some-model-gguf:q4_k_m": "hf.co/bartowski/Some-Model-GGUF:Q4_K_M",
		"llava:7b": "llava:7b", "llava": "", "llama3.2:1b": "", "registry.ollama.ai/library/llama3.2:3b": "",
	} {
		m, ok := c.Lookup(name)
		if ok != (id != "") || m.ID != id {
			t.Errorf("Lookup(%q) = %q, %v; want %q", name, m.ID, ok, id)
		}
	}

	m, _ := c.Lookup("llama3.2:3b")
	if m.Path != s.blobPath(llama) || !reflect.DeepEqual(m.Files, []string{m.Path}) || m.Root != s.dir ||
		m.Name != "Llama 3.2 3B" || m.Quantization != "Q4_K_M" || m.ContextLength != 8192 || m.SizeBytes != llama.Size ||
		m.Mmproj != "" || m.HubRepo != "" || m.HubName != "" {
		t.Errorf("llama3.2:3b: %+v", m)
	}
	defaults := map[string]any{"stop": []any{"<|eot_id|>"}, "temperature": 0.6, "num_ctx": 8192.0}
	wantNames := []OllamaName{
		{Name: "llama3.2:3b", Manifest: m3b, Defaults: defaults, Template: "{{ .Prompt }}"},
		{Name: "llama3.2:latest", Manifest: mLatest, Defaults: defaults, Template: "{{ .Prompt }}"},
		{Name: "mycoder:latest", Manifest: mCoder, Defaults: map[string]any{"temperature": 0.2}, Template: "{{ .Prompt }}", System: "You write Go."},
	}
	if !reflect.DeepEqual(m.Ollama, wantNames) {
		t.Errorf("Ollama names:\n%+v\nwant\n%+v", m.Ollama, wantNames)
	}
	if !reflect.DeepEqual(m.Defaults, defaults) {
		t.Errorf("Defaults = %v, want %v", m.Defaults, defaults)
	}
	if o, ok := m.OllamaNamed("MyCoder"); !ok || o.System != "You write Go." || o.Defaults["temperature"] != 0.2 {
		t.Errorf("OllamaNamed(MyCoder) = %+v, %v", o, ok)
	}
	if _, ok := m.OllamaNamed("llama3.2:1b"); ok {
		t.Error("OllamaNamed found a name the model does not have")
	}
	// Results are copies.
	m.Defaults["stop"].([]any)[0] = "changed"
	m.Ollama[0].Defaults["temperature"] = 1.0
	if again, _ := c.Lookup("llama3.2"); again.Defaults["stop"].([]any)[0] != "<|eot_id|>" || again.Ollama[0].Defaults["temperature"] != 0.6 {
		t.Error("Lookup returned shared defaults")
	}
	if v, _ := c.Lookup("llama3.2:3b@fast"); v.VariantOf != "llama3.2:3b" || v.Ollama != nil || !reflect.DeepEqual(v.Defaults, defaults) || v.Path != m.Path {
		t.Errorf("variant: %+v", v)
	}

	l, _ := c.Lookup("llava:7b")
	if l.Mmproj != s.blobPath(proj) {
		t.Errorf("llava projector = %q, want %q", l.Mmproj, s.blobPath(proj))
	}
	if h, _ := c.Lookup("hf.co/bartowski/Some-Model-GGUF:Q4_K_M"); h.HubRepo != "" || h.HubName != "" || h.Name != "from the Hub" {
		t.Errorf("hf.co pull: %+v", h)
	}

	// The same facts and estimates as for the same files found by name.
	plain := t.TempDir()
	for name, blob := range map[string]string{"v/llava.gguf": s.blobPath(llava), "v/mmproj-llava.gguf": s.blobPath(proj), "llama.gguf": s.blobPath(llama)} {
		testbed.Symlink(t, blob, filepath.Join(plain, filepath.FromSlash(name)))
	}
	pc, _ := newCatalog(t, Options{Dirs: []string{plain}})
	for id, pid := range map[string]string{"llava:7b": "llava", "llama3.2:3b": "llama"} {
		a, _ := c.Lookup(id)
		b, _ := pc.Lookup(pid)
		if a.Estimate != b.Estimate || a.Estimate.RAM <= 0 || a.Parameters != b.Parameters || a.Architecture != b.Architecture ||
			a.Quantization != b.Quantization || a.ContextLength != b.ContextLength || a.SizeBytes != b.SizeBytes || a.ChatTemplate != b.ChatTemplate {
			t.Errorf("%s from the store: %+v\nthe same file by name: %+v", id, a, b)
		}
	}

	if err := c.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := treeState(t, s.dir); !reflect.DeepEqual(before, after) {
		t.Errorf("the store changed:\nbefore %v\nafter  %v", before, after)
	}
}

func TestOllamaDuplicates(t *testing.T) {
	base := t.TempDir()
	s := newTestStore(t, filepath.Join(base, "a", "models"))
	blob := s.model(ggufwrite.HeaderOptions{})
	s.manifest("registry.ollama.ai/library/llama3.2/3b", blob)
	s.manifest("registry.ollama.ai/library/llama3.2/latest", blob)
	s.manifest("registry.ollama.ai/library/llama3.22/copy", blob) // ollama cp: a name sorted after llama3.2's, part by part

	// A .gguf link to the blob is the same file: one entry, by whichever folder comes first,
	// which keeps the store's names.
	plain := filepath.Join(base, "plain")
	testbed.Symlink(t, s.blobPath(blob), filepath.Join(plain, "linked.gguf"))
	for _, tt := range []struct {
		dirs []string
		id   string
	}{
		{[]string{plain, s.dir}, "linked"},
		{[]string{s.dir, plain}, "llama3.2:3b"},
		{[]string{s.dir, filepath.Join(base, "a"), s.dir + string(filepath.Separator)}, "llama3.2:3b"}, // the store three times
	} {
		c, _ := newCatalog(t, Options{Dirs: tt.dirs})
		if got := ids(c.Models()); !reflect.DeepEqual(got, []string{tt.id}) {
			t.Errorf("%v: IDs = %v, want [%s]", tt.dirs, got, tt.id)
		}
		m, _ := c.Lookup("llama3.2")
		if m.ID != tt.id || len(m.Ollama) != 3 || m.Ollama[0].Name != "llama3.2:3b" || m.Ollama[1].Name != "llama3.2:latest" || m.Ollama[2].Name != "llama3.22:copy" {
			t.Errorf("%v: Lookup(llama3.2) = %q with names %+v", tt.dirs, m.ID, m.Ollama)
		}
		if w := c.Warnings(); len(w) != 0 {
			t.Errorf("%v: warnings %v", tt.dirs, w)
		}
	}

	// Two stores with the same name: their IDs are qualified by the stores' folders, as
	// clashing file names are; the name itself goes to the first by ID.
	s2 := newTestStore(t, filepath.Join(base, "b", "models"))
	s2.manifest("registry.ollama.ai/library/llama3.2/3b", s2.model(ggufwrite.HeaderOptions{Name: "other"}))
	c, _ := newCatalog(t, Options{Dirs: []string{s.dir, s2.dir}})
	if got, want := ids(c.Models()), []string{"a/models/llama3.2:3b", "b/models/llama3.2:3b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("two stores: IDs = %v, want %v", got, want)
	}
	if m, _ := c.Lookup("llama3.2:3b"); m.ID != "a/models/llama3.2:3b" {
		t.Errorf("two stores: llama3.2:3b is %q", m.ID)
	}
	if m, _ := c.Lookup("b/models/llama3.2:3b"); m.Name != "other" {
		t.Errorf("b/models/llama3.2:3b = %+v", m)
	}
}

func TestOllamaOldBlobNames(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no colons in Windows file names")
	}
	s := newTestStore(t, t.TempDir())
	l := s.model(ggufwrite.HeaderOptions{})
	old := filepath.Join(s.dir, "blobs", l.Digest) // sha256:HEX
	if err := os.Rename(s.blobPath(l), old); err != nil {
		t.Fatal(err)
	}
	s.manifest("registry.ollama.ai/library/old/latest", l)
	c, _ := newCatalog(t, Options{Dirs: []string{s.dir}})
	if m, ok := c.Lookup("old"); !ok || m.Path != old {
		t.Errorf("Lookup(old) = %+v, %v; warnings %v", m, ok, c.Warnings())
	}
}

// TestOllamaModelsEnv: a store at $OLLAMA_MODELS is scanned with the default folders.
func TestOllamaModelsEnv(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	for _, v := range []string{"LLAMA_CACHE", "HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME", "XDG_DATA_HOME", "LOCALAPPDATA"} {
		t.Setenv(v, filepath.Join(home, "unused", v))
	}
	s := newTestStore(t, filepath.Join(t.TempDir(), "moved"))
	s.manifest("registry.ollama.ai/library/qwen3/0.6b", s.model(ggufwrite.HeaderOptions{}))
	t.Setenv("OLLAMA_MODELS", s.dir)

	cfg := config.Default()
	dirs := cfg.ModelDirsResolved() // this machine's own folders may be among them
	if !slices.Contains(dirs, s.dir) || slices.Contains(dirs, filepath.Join(home, ".ollama", "models")) {
		t.Fatalf("ModelDirsResolved() = %v, want %s there, in place of ~/.ollama/models", dirs, s.dir)
	}
	if err := os.MkdirAll(filepath.Join(home, ".ollama", "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	if dirs := cfg.ModelDirsResolved(); slices.Contains(dirs, filepath.Join(home, ".ollama", "models")) {
		t.Errorf("ModelDirsResolved() = %v: ~/.ollama/models while OLLAMA_MODELS is set", dirs)
	}
	c, _ := newCatalog(t, Options{Dirs: []string{s.dir}})
	if m, ok := c.Lookup("qwen3:0.6b"); !ok || m.Path != filepath.Join(s.dir, "blobs", filepath.Base(m.Path)) {
		t.Errorf("Lookup(qwen3:0.6b) = %+v, %v; warnings %v", m, ok, c.Warnings())
	}
	cfg.ScanDefaultDirs = false
	if dirs := cfg.ModelDirsResolved(); len(dirs) != 0 {
		t.Errorf("scan_default_dirs off: %v", dirs)
	}
}

// TestOllamaPullIsSeen: a manifest written by ollama pull shows up as a new .gguf file does, and
// a store that did not change, broken parts included, is not rescanned.
func TestOllamaPullIsSeen(t *testing.T) {
	s := newTestStore(t, t.TempDir())
	s.manifest("registry.ollama.ai/library/first/latest", s.model(ggufwrite.HeaderOptions{}))
	s.raw("registry.ollama.ai/library/broken/latest", []byte("{"))
	c, _ := newCatalog(t, Options{Dirs: []string{s.dir}})
	ctx := context.Background()
	if c.Changed(ctx) {
		t.Fatal("Changed right after a scan")
	}
	ch, unsubscribe := c.Subscribe()
	defer unsubscribe()
	done := make(chan struct{})
	wctx, cancel := context.WithCancel(ctx)
	go func() {
		defer close(done)
		c.Watch(wctx, 10*time.Millisecond)
	}()
	defer func() {
		cancel()
		<-done
	}()

	// As ollama pull does: the blobs first, the manifest last.
	l := s.model(ggufwrite.HeaderOptions{Name: "pulled"})
	s.manifest("registry.ollama.ai/library/pulled/1b", l)
	waitSignal(t, ch, "a new manifest")
	if m, ok := c.Lookup("pulled:1b"); !ok || m.Name != "pulled" {
		t.Fatalf("after the pull: %v", ids(c.Models()))
	}

	// ollama rm: the manifest goes.
	if err := os.Remove(filepath.Join(s.dir, "manifests", "registry.ollama.ai", "library", "first", "latest")); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, ch, "a removed manifest")
	if got := ids(c.Models()); !reflect.DeepEqual(got, []string{"pulled:1b"}) {
		t.Fatalf("after rm: %v", got)
	}
	if w := c.Warnings(); len(w) != 1 || !strings.Contains(w[0], "broken:latest") {
		t.Errorf("warnings = %v", w)
	}
}
