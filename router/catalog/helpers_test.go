package catalog

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// tiny is a small header-only llama for fixtures; o's non-zero fields override it.
func tiny(o ggufwrite.HeaderOptions) ggufwrite.HeaderOptions {
	if o.Blocks == 0 {
		o.Blocks = 2
	}
	if o.Embedding == 0 {
		o.Embedding = 64
	}
	if o.FFN == 0 {
		o.FFN = 128
	}
	if o.Heads == 0 {
		o.Heads = 4
	}
	if o.Vocab == 0 {
		o.Vocab = 512
	}
	if o.ContextLength == 0 {
		o.ContextLength = 2048
	}
	return o
}

// writeModel writes a header-only model fixture at path (folders created).
func writeModel(t testing.TB, path string, o ggufwrite.HeaderOptions) {
	t.Helper()
	writeFile(t, path, ggufwrite.Header(tiny(o)))
}

func writeFile(t testing.TB, path string, f *ggufwrite.File) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ggufwrite.WriteFile(path, f); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

// writeProjector writes a small CLIP vision projector (mmproj) fixture.
func writeProjector(t testing.TB, path string, width int) {
	t.Helper()
	writeFile(t, path, ggufwrite.Projector(width))
}

// logBuffer collects a logger's records for assertions.
type logBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) count(s string) int { return strings.Count(l.String(), s) }

// newCatalog scans dirs with a logger writing to the returned buffer.
func newCatalog(t testing.TB, o Options) (*Catalog, *logBuffer) {
	t.Helper()
	lb := &logBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := New(o)
	if err := c.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, lb
}

func ids(ms []Model) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}
