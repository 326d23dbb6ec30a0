package catalog

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// variantTable is a concurrency-safe Options.Variants for tests.
type variantTable struct {
	mu sync.Mutex // guards m
	m  map[string][]string
}

func (v *variantTable) get() map[string][]string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.m
}

func (v *variantTable) set(m map[string][]string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.m = m
}

// Each configured variant is one more entry for its model's file, with its own ID, aliases and
// estimate; a variant of a model not found, or whose ID a file has, is a warning.
func TestVariants(t *testing.T) {
	root := t.TempDir()
	opts := ggufwrite.HeaderOptions{Blocks: 8, Embedding: 512, FFN: 1024, Heads: 8, FileType: 1, ContextLength: 32768}
	writeModel(t, filepath.Join(root, "m.gguf"), opts)
	writeModel(t, filepath.Join(root, "m@taken.gguf"), opts)
	params := &paramsTable{m: map[string]EstimateParams{
		"m": {ContextSize: 4096}, "m@small": {ContextSize: 512}, "m@big": {ContextSize: 16384},
	}}
	vt := &variantTable{m: map[string][]string{"m": {"big", "small", "taken"}, "gone": {"x"}}}
	aliases := func(id string) []string {
		if id == "m@big" {
			return []string{"m-big"}
		}
		return nil
	}
	c, _ := newCatalog(t, Options{Dirs: []string{root}, Params: params.get, Variants: vt.get, Aliases: aliases,
		Hidden: func(id string) bool { return id == "m@small" }})

	if got := ids(c.Models()); !slices.Equal(got, []string{"m", "m@big", "m@taken"}) {
		t.Fatalf("models = %v", got)
	}
	base, _ := c.Lookup("m")
	big, ok := c.Lookup("m-big")
	if !ok || big.ID != "m@big" || big.VariantOf != "m" || big.Variant != "big" || big.Path != base.Path || big.SizeBytes != base.SizeBytes {
		t.Fatalf("m@big by its alias: %+v", big)
	}
	small, ok := c.Lookup("m@small")
	if !ok || small.VariantOf != "m" {
		t.Fatal("a hidden variant is not found by its ID")
	}
	if !(small.Estimate.ContextSize == 512 && base.Estimate.ContextSize == 4096 && big.Estimate.ContextSize == 16384) ||
		!(small.Estimate.RAM < base.Estimate.RAM && base.Estimate.RAM < big.Estimate.RAM) {
		t.Fatalf("estimates: small %+v, base %+v, big %+v", small.Estimate, base.Estimate, big.Estimate)
	}
	if taken, _ := c.Lookup("m@taken"); taken.VariantOf != "" {
		t.Fatal("the file m@taken.gguf lost its ID to a variant")
	}
	w := strings.Join(c.Warnings(), "\n")
	for _, want := range []string{
		`[models."m".variants."taken"]: m@taken is already the ID of a model file`,
		`[models."gone".variants."x"]: no model "gone" was found; gone@x is not served`,
	} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %q", w, want)
		}
	}

	// A variant removed from the configuration goes at the next scan.
	vt.set(map[string][]string{"m": {"big"}})
	if err := c.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Lookup("m@small"); ok {
		t.Fatal("a removed variant is still in the catalog")
	}
}
