package testbed

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// OllamaStore lays out under dir the store a real Ollama wrote (testdata/ollama/store: its
// manifests and small layers) with its model layers put back as testdata/ollama/README.md says
// they were made: ggufwrite's -width 64 -blocks 2 -seed 1 -name tiny llama, which ollama create
// rewrote adding general.quantization_version (and tiny-embed has llama.pooling_type 1). Their
// headers and sizes are those of the layers Ollama wrote; their digests are not (the catalog reads
// headers and checks sizes).
func OllamaStore(tb testing.TB, dir string) {
	tb.Helper()
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	root, err := moduleRoot(wd)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "router", "testbed", "testdata", "ollama", "store"))); err != nil {
		tb.Fatal(err)
	}
	for digest, extra := range map[string][]ggufwrite.KV{
		"06aa59e320f2ba33eff0b81ef639be9929e4e7ca92ae9795a28e01861409ab6b": nil,                                             // tiny, tiny2:v1
		"f0cf3b32ab9fd00ec5f49d7a38cd154c982caa0c8c782c69c620f7ffa9a22cb3": nil,                                             // tiny-raw
		"5ba1be8d41d007e244c831a13e937b53ebc22451d96722079cc11e43ddcb0dc5": {{Key: "llama.pooling_type", Value: uint32(1)}}, // tiny-embed
	} {
		f := ggufwrite.Llama(ggufwrite.LlamaOptions{Width: 64, Blocks: 2, Seed: 1, Name: "tiny"})
		f.KVs = append(append(f.KVs, ggufwrite.KV{Key: "general.quantization_version", Value: uint32(2)}), extra...)
		if err := ggufwrite.WriteFile(filepath.Join(dir, "blobs", "sha256-"+digest), f); err != nil {
			tb.Fatal(err)
		}
	}
}
