package catalog

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

func TestQuantOf(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Llama-3.2-1B-Instruct-Q4_K_M.gguf", "Q4_K_M"},
		{"qwen2.5-0.5b-instruct-q4_k_m.gguf", "Q4_K_M"},
		{"model.IQ2_XXS.gguf", "IQ2_XXS"},
		{"gemma-3-4b-it-BF16-00001-of-00002.gguf", "BF16"},
		{"Q8_0/big-model-00002-of-00003.gguf", "Q8_0"},
		{"tiny-f16.gguf", "F16"},
		{"gpt-oss-20b-mxfp4.gguf", "MXFP4"},
		{"mmproj-model-f16.gguf", "F16"},
		{"plain.gguf", ""},
		{"Q4-not-a-quant.gguf", ""},
	} {
		if got := QuantOf(c.in); got != c.want {
			t.Errorf("QuantOf(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A model in the Hub cache answers to ORG/REPO:QUANT, the quant matched without case; a file
// without a quant in its name falls back to the header's.
func TestHubNames(t *testing.T) {
	hub := t.TempDir()
	blobs := filepath.Join(hub, "models--Org--Tiny-GGUF", "blobs")
	writeModel(t, filepath.Join(blobs, "aaa"), ggufwrite.HeaderOptions{})
	writeModel(t, filepath.Join(blobs, "bbb"), ggufwrite.HeaderOptions{})
	writeHFRepo(t, hub, "Org", "Tiny-GGUF", "rev1", map[string]map[string]string{
		"rev1": {"tiny-Q4_K_M.gguf": "aaa", "tiny.gguf": "bbb"},
	})
	c, _ := newCatalog(t, Options{Dirs: []string{hub}})
	m, ok := c.Lookup("org/tiny-gguf:q4_k_m")
	if !ok || m.HubName != "Org/Tiny-GGUF:Q4_K_M" || m.HubRepo != "Org/Tiny-GGUF" {
		t.Fatalf("lookup by hub name: %+v %v", m, ok)
	}
	if m2, ok := c.Lookup(m.ID); !ok || m2.Path != m.Path {
		t.Errorf("catalog ID %q no longer resolves", m.ID)
	}
	var other Model
	for _, x := range c.Models() {
		if x.Path != m.Path {
			other = x
		}
	}
	if other.HubName == "" || !strings.HasPrefix(other.HubName, "Org/Tiny-GGUF:") {
		t.Errorf("header quant fallback: %q", other.HubName)
	}
	if _, ok := c.Lookup("Org/Tiny-GGUF:Q8_0"); ok {
		t.Error("a quant that is not on disk resolved")
	}
}

// EstimateParts gives the same estimate from a file's first bytes as a scan of the whole file.
func TestEstimatePartsMatchesScan(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.gguf")
	writeModel(t, p, ggufwrite.HeaderOptions{})
	c, _ := newCatalog(t, Options{Dirs: []string{dir}})
	want := c.Models()[0].Estimate
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	est, facts, err := EstimateParts([]HeaderPart{{R: bytes.NewReader(b[:min(len(b), 1<<20)]), Size: int64(len(b))}}, nil, EstimateParams{ContextSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if est != want || facts.Architecture != "llama" {
		t.Errorf("estimate %+v facts %+v, want %+v", est, facts, want)
	}
	if _, _, err := EstimateParts([]HeaderPart{{R: bytes.NewReader(b[:100]), Size: int64(len(b))}}, nil, EstimateParams{}); err == nil {
		t.Error("a cut header gave no error")
	}
}
