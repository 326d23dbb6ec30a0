package catalog

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// BenchmarkScan1000 scans 1,000 header-only models spread over 10 folders: "cold" with a new
// catalog each time (every header read and estimated), "warm" rescanning an unchanged folder
// tree with the cache filled.
func BenchmarkScan1000(b *testing.B) {
	root := b.TempDir()
	for i := range 1000 {
		writeModel(b, filepath.Join(root, fmt.Sprintf("dir%d", i%10), fmt.Sprintf("model-%04d.gguf", i)),
			ggufwrite.HeaderOptions{Blocks: 4, Embedding: 256, FFN: 512, Heads: 8, Vocab: 2000, FileType: 15})
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	scan := func(b *testing.B, c *Catalog) {
		if err := c.Scan(context.Background()); err != nil {
			b.Fatal(err)
		}
		if n := len(c.Models()); n != 1000 {
			b.Fatalf("%d models, want 1000: %v", n, c.Warnings())
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			scan(b, New(Options{Dirs: []string{root}, Logger: quiet}))
		}
	})
	b.Run("warm", func(b *testing.B) {
		c := New(Options{Dirs: []string{root}, Logger: quiet})
		scan(b, c)
		for b.Loop() {
			scan(b, c)
		}
	})
	b.Run("changed", func(b *testing.B) { // the Watch check on an unchanged tree
		c := New(Options{Dirs: []string{root}, Logger: quiet})
		scan(b, c)
		for b.Loop() {
			if c.Changed(context.Background()) {
				b.Fatal("changed")
			}
		}
	})
}
