package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// The recorded store names these models by digest (see testdata/ollama/README.md): the bytes
// written must stay the same.
func TestWriteModelsIsStable(t *testing.T) {
	dir := t.TempDir()
	if err := writeModels(dir); err != nil {
		t.Fatal(err)
	}
	// tiny-raw: mkgguf -width 64 -blocks 2 -seed 1 -name tiny, as it is
	raw := ggufwrite.Llama(ggufwrite.LlamaOptions{Width: 64, Blocks: 2, Seed: 1, Name: "tiny"})
	if err := ggufwrite.WriteFile(filepath.Join(dir, "tiny-raw.gguf"), raw); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"tiny.gguf":       "ea16c910a621ee48be113f58e7add46d08c641fecb1b55fa5404cace6d7181ba",
		"tiny-embed.gguf": "c02dc93bf69dc5cf0902a1f2a854ed36a917106741b27fc13230751f757e892c",
		"tiny-raw.gguf":   "dee9f1d0616045771dcc266f972077d50a4f8b2b4d7427b7b989e0bf47712a1a",
	} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s: sha256 %s, want %s", name, got, want)
		}
	}
}
