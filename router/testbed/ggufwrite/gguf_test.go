package ggufwrite

import (
	"crypto/sha256"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	parser "github.com/gpustack/gguf-parser-go"
)

// parse parses path with gguf-parser-go, failing the test on error.
func parse(t *testing.T, path string) *parser.GGUFFile {
	t.Helper()
	gf, err := parser.ParseGGUFFile(path)
	if err != nil {
		t.Fatalf("ParseGGUFFile(%s): %v", path, err)
	}
	return gf
}

// params returns the number of parameters the file declares.
func params(f *File) uint64 {
	var n uint64
	for _, t := range f.Tensors {
		p := uint64(1)
		for _, d := range t.Shape {
			p *= d
		}
		n += p
	}
	return n
}

func TestLlamaRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	f := Llama(LlamaOptions{Seed: 7})
	if err := WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != want {
		t.Fatalf("file is %d bytes, Size() says %d", st.Size(), want)
	}
	if st.Size() < 400<<10 || st.Size() > 1<<20 {
		t.Errorf("64-wide 2-block model is %d bytes, want about half a megabyte", st.Size())
	}

	gf := parse(t, path)
	if gf.Header.Version != parser.GGUFVersionV3 || gf.Header.Magic != parser.GGUFMagicGGUFLe {
		t.Errorf("magic %v version %v, want GGUF little-endian v3", gf.Header.Magic, gf.Header.Version)
	}
	md := gf.Metadata()
	if md.Architecture != "llama" || md.Name != "ggufwrite llama 64x2" || md.Alignment != 32 {
		t.Errorf("metadata: arch %q name %q alignment %d", md.Architecture, md.Name, md.Alignment)
	}
	if md.FileType != parser.GGUFFileTypeMostlyF32 {
		t.Errorf("file type %v, want F32", md.FileType)
	}
	if uint64(md.Parameters) != params(f) {
		t.Errorf("parameters %d, want %d", uint64(md.Parameters), params(f))
	}
	if int64(md.FileSize) != st.Size() {
		t.Errorf("parser file size %d, want %d", int64(md.FileSize), st.Size())
	}
	ar := gf.Architecture()
	if ar.BlockCount != 2 || ar.EmbeddingLength != 64 || !allEqual(ar.FeedForwardLength, 256) ||
		ar.AttentionHeadCount != 4 || ar.AttentionHeadCountKV != 4 || ar.MaximumContextLength != 2048 {
		t.Errorf("architecture: %+v", ar)
	}
	wantTensors := 3 + 9*2
	if gf.Header.TensorCount != uint64(wantTensors) || len(gf.TensorInfos) != wantTensors {
		t.Errorf("tensor count %d (%d infos), want %d", gf.Header.TensorCount, len(gf.TensorInfos), wantTensors)
	}
	tk := gf.Tokenizer()
	if tk.Model != "llama" || tk.TokensLength != uint64(len(baseVocab().tokens)) ||
		tk.BOSTokenID != 1 || tk.EOSTokenID != 2 || tk.UnknownTokenID != 0 {
		t.Errorf("tokenizer: %+v", tk)
	}
	if kv, ok := gf.Header.MetadataKV.Get("tokenizer.chat_template"); !ok || kv.ValueString() != DefaultChatTemplate {
		t.Errorf("chat template missing or wrong: %v", kv.Value)
	}
	if kv, ok := gf.Header.MetadataKV.Get("llama.vocab_size"); !ok || kv.ValueUint32() != uint32(tk.TokensLength) {
		t.Errorf("llama.vocab_size %v, want %d", kv.Value, tk.TokensLength)
	}
	types := mustKV(t, gf, "tokenizer.ggml.token_type").ValueArray().ValuesInt32()
	if types[0] != 2 || types[1] != 3 || types[2] != 3 || types[3] != 6 || types[258] != 6 || types[259] != 1 {
		t.Errorf("token types start %v, byte tokens end with %d, then %d", types[:4], types[258], types[259])
	}

	// Check the data: norms are 1.0, weights are small, random and not zero.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string][]uint64{
		"token_embd.weight":      {64, uint64(tk.TokensLength)},
		"blk.1.ffn_up.weight":    {64, 256},
		"blk.1.ffn_down.weight":  {256, 64},
		"blk.0.attn_k.weight":    {64, 64},
		"blk.0.attn_norm.weight": {64},
	}
	for _, ti := range gf.TensorInfos {
		if ti.Offset%32 != 0 {
			t.Errorf("tensor %s at unaligned offset %d", ti.Name, ti.Offset)
		}
		if s, ok := shapes[ti.Name]; ok && !equalShape(ti.Dimensions, s) {
			t.Errorf("tensor %s shape %v, want %v", ti.Name, ti.Dimensions, s)
		}
		start := gf.TensorDataStartOffset + int64(ti.Offset)
		vals := floats(raw[start : start+int64(ti.Elements())*4])
		if strings.HasSuffix(ti.Name, "norm.weight") {
			for _, v := range vals {
				if v != 1 {
					t.Fatalf("norm %s holds %v, want 1", ti.Name, v)
				}
			}
			continue
		}
		scale := float32(1 / math.Sqrt(float64(ti.Dimensions[0])))
		nonzero := 0
		for _, v := range vals {
			if v < -scale || v > scale || math.IsNaN(float64(v)) {
				t.Fatalf("weight %s holds %v, outside ±%v", ti.Name, v, scale)
			}
			if v != 0 {
				nonzero++
			}
		}
		if nonzero < len(vals)*9/10 {
			t.Errorf("weight %s: only %d of %d values are non-zero", ti.Name, nonzero, len(vals))
		}
	}
}

func mustKV(t *testing.T, gf *parser.GGUFFile, key string) parser.GGUFMetadataKV {
	t.Helper()
	kv, ok := gf.Header.MetadataKV.Get(key)
	if !ok {
		t.Fatalf("metadata key %q missing", key)
	}
	return kv
}

func equalShape(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// allEqual reports whether vs is non-empty and every value is v.
func allEqual(vs []uint64, v uint64) bool {
	for _, x := range vs {
		if x != v {
			return false
		}
	}
	return len(vs) > 0
}

func floats(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func digest(t *testing.T, f *File) [32]byte {
	t.Helper()
	h := sha256.New()
	n, err := f.WriteTo(h)
	if err != nil {
		t.Fatal(err)
	}
	if size, _ := f.Size(); n != size {
		t.Fatalf("WriteTo wrote %d bytes, Size() says %d", n, size)
	}
	var d [32]byte
	copy(d[:], h.Sum(nil))
	return d
}

func TestLlamaDeterministic(t *testing.T) {
	f := Llama(LlamaOptions{Seed: 1})
	a := digest(t, f)
	if b := digest(t, f); a != b {
		t.Error("writing the same File twice gave different bytes")
	}
	if b := digest(t, Llama(LlamaOptions{Seed: 1})); a != b {
		t.Error("the same seed gave different bytes")
	}
	if b := digest(t, Llama(LlamaOptions{Seed: 2})); a == b {
		t.Error("different seeds gave the same bytes")
	}
}

// TestLlamaStreams checks that writing a model allocates far less than its
// size: the weights are generated while streaming.
func TestLlamaStreams(t *testing.T) {
	f := Llama(LlamaOptions{Width: 384, Blocks: 4})
	size, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n, err := f.WriteTo(io.Discard)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if n != size || size < 30<<20 {
		t.Fatalf("wrote %d bytes, Size() %d, want over 30 MiB", n, size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(size)/4 {
		t.Errorf("writing %d bytes allocated %d bytes; the data should stream", size, alloc)
	}
}

func TestWidthsAndHeadsKV(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gqa.gguf")
	o := LlamaOptions{Width: 128, Blocks: 3, FFN: 320, Heads: 8, HeadsKV: 2, ContextLength: 4096, Name: "gqa"}
	if err := WriteLlama(path, o); err != nil {
		t.Fatal(err)
	}
	gf := parse(t, path)
	ar := gf.Architecture()
	if ar.BlockCount != 3 || !allEqual(ar.FeedForwardLength, 320) || ar.AttentionHeadCountKV != 2 || ar.MaximumContextLength != 4096 {
		t.Errorf("architecture: %+v", ar)
	}
	for _, ti := range gf.TensorInfos {
		if ti.Name == "blk.2.attn_v.weight" && !equalShape(ti.Dimensions, []uint64{128, 32}) {
			t.Errorf("attn_v shape %v, want [128 32] (head size 16 × 2 kv heads)", ti.Dimensions)
		}
	}
	if gf.Metadata().Name != "gqa" {
		t.Errorf("name %q", gf.Metadata().Name)
	}
}

// BenchmarkLlamaWriteTo measures how fast random weights are generated and
// streamed.
func BenchmarkLlamaWriteTo(b *testing.B) {
	f := Llama(LlamaOptions{Width: 256, Blocks: 2})
	size, err := f.Size()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	for b.Loop() {
		if _, err := f.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
