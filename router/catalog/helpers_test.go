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
	w := uint64(width)
	f := &ggufwrite.File{Sparse: true, KVs: []ggufwrite.KV{
		{Key: "general.architecture", Value: "clip"},
		{Key: "general.type", Value: "mmproj"},
		{Key: "general.name", Value: "test projector"},
		{Key: "general.file_type", Value: uint32(1)},
		{Key: "clip.has_vision_encoder", Value: true},
		{Key: "clip.projector_type", Value: "mlp"},
		{Key: "clip.vision.image_size", Value: uint32(224)},
		{Key: "clip.vision.patch_size", Value: uint32(14)},
		{Key: "clip.vision.embedding_length", Value: uint32(width)},
		{Key: "clip.vision.feed_forward_length", Value: uint32(2 * width)},
		{Key: "clip.vision.block_count", Value: uint32(2)},
		{Key: "clip.vision.attention.head_count", Value: uint32(4)},
		{Key: "clip.vision.attention.layer_norm_epsilon", Value: float32(1e-5)},
		{Key: "clip.vision.projection_dim", Value: uint32(64)},
	}}
	add := func(name string, shape ...uint64) {
		f.Tensors = append(f.Tensors, ggufwrite.Tensor{Name: name, Shape: shape, Type: ggufwrite.GGMLTypeF16})
	}
	add("v.patch_embd.weight", 14, 14, 3, w)
	add("v.position_embd.weight", w, 257)
	for _, b := range []string{"0", "1"} {
		for _, n := range []string{"attn_q", "attn_k", "attn_v", "attn_out"} {
			add("v.blk."+b+"."+n+".weight", w, w)
		}
		add("v.blk."+b+".ffn_up.weight", w, 2*w)
		add("v.blk."+b+".ffn_down.weight", 2*w, w)
	}
	add("mm.0.weight", w, 64)
	add("mm.2.weight", 64, 64)
	writeFile(t, path, f)
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
