package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/testbed/bench/harness"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// scanResult is the catalog scan of many GGUF headers.
type scanResult struct {
	models int
	cold   []time.Duration // a new catalog each time: every header read and estimated
	warm   []time.Duration // rescans of an unchanged tree with the cache filled
}

// measureScan writes n sparse header-only GGUF files over 10 folders under dir, then times cold
// scans (a new catalog each) and warm rescans. The files are in the page cache for every scan but
// the first: "cold" means the catalog's cache, not the disk's.
func measureScan(ctx context.Context, dir string, n, coldRuns, warmRuns int) (scanResult, error) {
	res := scanResult{models: n}
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("dir%d", i%10))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return res, err
		}
		f := ggufwrite.Header(ggufwrite.HeaderOptions{Name: fmt.Sprintf("scan %d", i), Blocks: 4, Embedding: 256, FFN: 512, Heads: 8, Vocab: 2000, FileType: 15})
		if err := ggufwrite.WriteFile(filepath.Join(sub, fmt.Sprintf("model-%04d.gguf", i)), f); err != nil {
			return res, fmt.Errorf("writing header %d: %w", i, err)
		}
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	scan := func(c *catalog.Catalog) (time.Duration, error) {
		start := time.Now()
		if err := c.Scan(ctx); err != nil {
			return 0, err
		}
		took := time.Since(start)
		if got := len(c.Models()); got != n {
			return 0, fmt.Errorf("scan found %d models, want %d: %v", got, n, c.Warnings())
		}
		return took, nil
	}
	var warmCat *catalog.Catalog
	for range coldRuns {
		c := catalog.New(catalog.Options{Dirs: []string{dir}, Logger: quiet})
		d, err := scan(c)
		if err != nil {
			return res, err
		}
		res.cold = append(res.cold, d)
		warmCat = c
	}
	for range warmRuns {
		d, err := scan(warmCat)
		if err != nil {
			return res, err
		}
		res.warm = append(res.warm, d)
	}
	return res, nil
}

func (s scanResult) coldMedian() time.Duration { return harness.Median(s.cold) }
func (s scanResult) warmMedian() time.Duration { return harness.Median(s.warm) }
