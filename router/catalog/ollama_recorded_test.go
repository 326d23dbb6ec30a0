package catalog

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/llamatray/llamatray/router/testbed"
)

// recordedStore is the store a real Ollama wrote (router/testbed/testdata/ollama/README.md): its
// manifests and small blobs, without the model layers.
const recordedStore = "../testbed/testdata/ollama/store"

// TestOllamaRecordedStore reads a copy of the store Ollama 0.33 wrote, its model layers put back
// (testbed.OllamaStore) as the recording's README tells how they were made: mkgguf's -width 64
// -blocks 2 -seed 1 -name tiny llama, rewritten by ollama create, which adds general.quantization_version (and
// tiny-embed has llama.pooling_type 1). The catalog reads headers and checks sizes, not
// digests, so these stand-ins, of the same header and size, serve for the layers Ollama wrote.
// What the catalog gives is checked against what Ollama itself answered (tags.json).
func TestOllamaRecordedStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "models")
	testbed.OllamaStore(t, dir)

	c, _ := newCatalog(t, Options{Dirs: []string{dir}})
	if w := c.Warnings(); len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
	if got, want := ids(c.Models()), []string{"tiny-embed:latest", "tiny-raw:latest", "tiny:latest"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("IDs = %v, want %v", got, want)
	}
	for name, id := range map[string]string{"tiny": "tiny:latest", "tiny2:v1": "tiny:latest", "tiny2": "", "tiny-embed": "tiny-embed:latest", "tiny-raw": "tiny-raw:latest"} {
		if m, ok := c.Lookup(name); ok != (id != "") || m.ID != id {
			t.Errorf("Lookup(%q) = %q, %v; want %q", name, m.ID, ok, id)
		}
	}

	template, err := fs.ReadFile(os.DirFS(recordedStore), "blobs/sha256-2c0285069acae230288f0ee481cb859b5c115159db1a3f05f665d2ecde3115ab")
	if err != nil {
		t.Fatal(err)
	}
	tiny, _ := c.Lookup("tiny")
	defaults := map[string]any{"stop": []any{"<|im_end|>"}, "temperature": 0.7}
	manifest := func(model, tag string) string {
		return filepath.Join(dir, "manifests", "registry.ollama.ai", "library", model, tag)
	}
	want := []OllamaName{
		{Name: "tiny:latest", Manifest: manifest("tiny", "latest"), Defaults: defaults, Template: string(template), System: "You are a tiny test model."},
		{Name: "tiny2:v1", Manifest: manifest("tiny2", "v1"), Defaults: defaults, Template: string(template), System: "You are a tiny test model."},
	}
	if !reflect.DeepEqual(tiny.Ollama, want) || !reflect.DeepEqual(tiny.Defaults, defaults) {
		t.Errorf("tiny's names:\n%+v\nwant\n%+v", tiny.Ollama, want)
	}
	if e, _ := c.Lookup("tiny-embed"); !reflect.DeepEqual(e.Defaults, map[string]any{"stop": []any{"<|im_start|>", "<|im_end|>"}}) || e.Ollama[0].System != "" {
		t.Errorf("tiny-embed: defaults %v, system %q", e.Defaults, e.Ollama[0].System)
	}

	// The facts Ollama gave for each model.
	b, err := os.ReadFile(filepath.Join(recordedStore, "..", "tags.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tags struct {
		Models []struct {
			Name    string
			Details struct {
				Family        string
				ParameterSize string `json:"parameter_size"`
				ContextLength int    `json:"context_length"`
			}
		}
	}
	if err := json.Unmarshal(b, &tags); err != nil {
		t.Fatal(err)
	}
	if len(tags.Models) != 4 {
		t.Fatalf("tags.json lists %d models", len(tags.Models))
	}
	for _, tm := range tags.Models {
		m, ok := c.Lookup(tm.Name)
		if !ok || m.Architecture != tm.Details.Family || ParamsLabel(m.Parameters) != tm.Details.ParameterSize ||
			m.ContextLength != tm.Details.ContextLength || m.Estimate.RAM <= 0 {
			t.Errorf("%s: %+v; Ollama said %+v", tm.Name, m, tm.Details)
		}
	}
}
