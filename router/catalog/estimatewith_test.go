package catalog

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// EstimateWith answers for other settings than the configured ones: a longer context needs more,
// a q8_0 KV cache less than f16, and an unknown model is an error.
func TestEstimateWith(t *testing.T) {
	dir := t.TempDir()
	f := ggufwrite.Header(ggufwrite.HeaderOptions{Blocks: 4, Embedding: 256, FFN: 512, Heads: 8, ContextLength: 32768})
	if err := ggufwrite.WriteFile(filepath.Join(dir, "m.gguf"), f); err != nil {
		t.Fatal(err)
	}
	c := New(Options{Dirs: []string{dir}})
	if err := c.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	need := func(p EstimateParams) int64 {
		t.Helper()
		e, err := c.EstimateWith("m", p)
		if err != nil {
			t.Fatal(err)
		}
		return e.RAM + e.VRAM
	}
	small, big := need(EstimateParams{ContextSize: 4096}), need(EstimateParams{ContextSize: 32768})
	q8 := need(EstimateParams{ContextSize: 32768, CacheType: "q8_0", FlashAttn: "on"})
	if !(small < big) || !(q8 < big) {
		t.Fatalf("4k %d, 32k %d, 32k q8_0 %d", small, big, q8)
	}
	// Heads of 16 values (64 wide, 4 heads) are not a whole number of q8_0 blocks.
	f = ggufwrite.Header(ggufwrite.HeaderOptions{Blocks: 2, Embedding: 64, FFN: 128, Heads: 4, ContextLength: 512})
	if err := ggufwrite.WriteFile(filepath.Join(dir, "narrow.gguf"), f); err != nil {
		t.Fatal(err)
	}
	if err := c.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	var se *SettingsError
	if _, err := c.EstimateWith("narrow", EstimateParams{CacheType: "q8_0"}); !errors.As(err, &se) || se.Key != "cache_type" {
		t.Fatalf("q8_0 cache on 16-value heads: %v", err)
	}
	if _, err := c.EstimateWith("narrow", EstimateParams{CacheType: "f16"}); err != nil {
		t.Fatalf("f16 cache: %v", err)
	}
	if _, err := c.EstimateWith("nope", EstimateParams{}); err == nil {
		t.Fatal("no error for an unknown model")
	}
}
