package ggufwrite

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	parser "github.com/gpustack/gguf-parser-go"
)

func TestKVTypesRoundTrip(t *testing.T) {
	f16 := make([]byte, 2*8*2)
	binary.LittleEndian.PutUint16(f16, 0x3C00) // 1.0 in half precision
	f := &File{
		KVs: []KV{
			{"t.u8", uint8(200)},
			{"t.i8", int8(-100)},
			{"t.u16", uint16(60000)},
			{"t.i16", int16(-30000)},
			{"t.u32", uint32(4000000000)},
			{"t.i32", int32(-2000000000)},
			{"t.u64", uint64(1) << 60},
			{"t.i64", int64(-1) << 60},
			{"t.f32", float32(1.5)},
			{"t.f64", math.Pi},
			{"t.bool", true},
			{"t.str", "héllo ▁"},
			{"t.strs", []string{"a", "", "ünï"}},
			{"t.i32s", []int32{-1, 0, 1}},
			{"t.u32s", []uint32{7, 8}},
			{"t.f32s", []float32{0.25, -2}},
		},
		Tensors: []Tensor{
			{Name: "half", Shape: []uint64{8, 2}, Type: GGMLTypeF16, Data: f16},
			{Name: "zeros", Shape: []uint64{3}, Type: GGMLTypeF32},
		},
	}
	path := filepath.Join(t.TempDir(), "kv.gguf")
	if err := WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	gf := parse(t, path)
	get := func(k string) parser.GGUFMetadataKV { return mustKV(t, gf, k) }
	checks := []struct {
		key  string
		got  any
		want any
	}{
		{"t.u8", get("t.u8").ValueUint8(), uint8(200)},
		{"t.i8", get("t.i8").ValueInt8(), int8(-100)},
		{"t.u16", get("t.u16").ValueUint16(), uint16(60000)},
		{"t.i16", get("t.i16").ValueInt16(), int16(-30000)},
		{"t.u32", get("t.u32").ValueUint32(), uint32(4000000000)},
		{"t.i32", get("t.i32").ValueInt32(), int32(-2000000000)},
		{"t.u64", get("t.u64").ValueUint64(), uint64(1) << 60},
		{"t.i64", get("t.i64").ValueInt64(), int64(-1) << 60},
		{"t.f32", get("t.f32").ValueFloat32(), float32(1.5)},
		{"t.f64", get("t.f64").ValueFloat64(), math.Pi},
		{"t.bool", get("t.bool").ValueBool(), true},
		{"t.str", get("t.str").ValueString(), "héllo ▁"},
		{"t.strs", get("t.strs").ValueArray().ValuesString(), []string{"a", "", "ünï"}},
		{"t.i32s", get("t.i32s").ValueArray().ValuesInt32(), []int32{-1, 0, 1}},
		{"t.u32s", get("t.u32s").ValueArray().ValuesUint32(), []uint32{7, 8}},
		{"t.f32s", get("t.f32s").ValueArray().ValuesFloat32(), []float32{0.25, -2}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.key, c.got, c.want)
		}
	}
	if len(gf.TensorInfos) != 2 || gf.TensorInfos[0].Type != parser.GGMLTypeF16 || gf.TensorInfos[1].Offset != 32 {
		t.Fatalf("tensor infos: %+v", gf.TensorInfos)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := raw[gf.TensorDataStartOffset : gf.TensorDataStartOffset+int64(len(f16))]; !bytes.Equal(got, f16) {
		t.Errorf("F16 data read back as %x", got)
	}
	if int64(len(raw)) != gf.TensorDataStartOffset+64 {
		t.Errorf("file is %d bytes, want data start %d + 64", len(raw), gf.TensorDataStartOffset)
	}
}

func TestAlignmentKeyAdded(t *testing.T) {
	f := &File{
		KVs:       []KV{{"general.architecture", "llama"}},
		Tensors:   []Tensor{{Name: "a", Shape: []uint64{3}}, {Name: "b", Shape: []uint64{5}}},
		Alignment: 64,
	}
	path := filepath.Join(t.TempDir(), "align.gguf")
	if err := WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	gf := parse(t, path)
	if md := gf.Metadata(); md.Alignment != 64 {
		t.Errorf("alignment %d, want 64", md.Alignment)
	}
	if gf.TensorDataStartOffset%64 != 0 || gf.TensorInfos[1].Offset != 64 {
		t.Errorf("data start %d, second tensor at %d", gf.TensorDataStartOffset, gf.TensorInfos[1].Offset)
	}
	if len(f.KVs) != 1 {
		t.Errorf("writing changed the caller's KVs: %v", f.KVs)
	}
}

// TestSparseMatchesDense checks that a sparse file reads exactly like the
// same file written densely.
func TestSparseMatchesDense(t *testing.T) {
	f := Header(HeaderOptions{Embedding: 64, Blocks: 2, FFN: 128, Heads: 4, Vocab: 400})
	f.Tensors[1].Data = onesF32(64) // output_norm: one tensor with real data
	var dense bytes.Buffer
	n, err := f.WriteTo(&dense)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sparse.gguf")
	if err := WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(raw)) != n || !bytes.Equal(raw, dense.Bytes()) {
		t.Fatalf("sparse file (%d bytes) differs from dense output (%d bytes)", len(raw), n)
	}
}

func TestInvalidInput(t *testing.T) {
	ok := Tensor{Name: "w", Shape: []uint64{4}}
	cases := []struct {
		name string
		f    *File
		want string
	}{
		{"empty key", &File{KVs: []KV{{"", uint8(1)}}}, "key is empty"},
		{"duplicate key", &File{KVs: []KV{{"a", uint8(1)}, {"a", uint8(2)}}}, "appears twice"},
		{"bad value", &File{KVs: []KV{{"a", 3}}}, "unsupported value type int"},
		{"nil value", &File{KVs: []KV{{"a", nil}}}, "value is nil"},
		{"alignment kv type", &File{KVs: []KV{{"general.alignment", uint64(32)}}}, "must be a uint32"},
		{"alignment mismatch", &File{KVs: []KV{{"general.alignment", uint32(64)}}}, "disagrees"},
		{"odd alignment", &File{Alignment: 12}, "not a multiple of 8"},
		{"no name", &File{Tensors: []Tensor{{Shape: []uint64{1}}}}, "empty name"},
		{"long name", &File{Tensors: []Tensor{{Name: strings.Repeat("n", 64), Shape: []uint64{1}}}}, "longer than 63"},
		{"no dims", &File{Tensors: []Tensor{{Name: "w"}}}, "0 dimensions"},
		{"five dims", &File{Tensors: []Tensor{{Name: "w", Shape: []uint64{1, 1, 1, 1, 1}}}}, "5 dimensions"},
		{"zero dim", &File{Tensors: []Tensor{{Name: "w", Shape: []uint64{2, 0}}}}, "dimension 1 is 0"},
		{"type", &File{Tensors: []Tensor{{Name: "w", Shape: []uint64{1}, Type: 12}}}, "unsupported ggml type 12"},
		{"data size", &File{Tensors: []Tensor{{Name: "w", Shape: []uint64{2}, Data: []byte{1}}}}, "needs 8"},
		{"overflow", &File{Tensors: []Tensor{{Name: "w", Shape: []uint64{1 << 40, 1 << 40}}}}, "overflows"},
		{"duplicate tensor", &File{Tensors: []Tensor{ok, ok}}, `"w" appears twice`},
		{"short fill", &File{Tensors: []Tensor{{Name: "w", Shape: []uint64{2},
			Fill: func(w io.Writer) error { _, err := w.Write([]byte{1}); return err }}}}, "wrote 1 of 8"},
		{"long fill", &File{Tensors: []Tensor{{Name: "w", Shape: []uint64{1},
			Fill: func(w io.Writer) error { _, err := w.Write(make([]byte, 9)); return err }}}}, "overflows its size"},
		{"llama heads", Llama(LlamaOptions{Width: 64, Heads: 5}), "not a multiple of heads 5"},
		{"llama kv heads", Llama(LlamaOptions{Heads: 4, HeadsKV: 3}), "not a multiple of heads_kv 3"},
		{"llama odd head", Llama(LlamaOptions{Width: 12, Heads: 4}), "must be even"},
		{"llama negative", Llama(LlamaOptions{Blocks: -1}), "must be positive"},
		{"header vocab", Header(HeaderOptions{Vocab: 10}), "smaller than"},
		{"header split", Header(HeaderOptions{SplitNo: 3, SplitCount: 3}), "out of range"},
		{"header split no", Header(HeaderOptions{SplitNo: 1}), "needs SplitCount"},
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "keep.gguf")
	if err := WriteFile(path, Llama(LlamaOptions{})); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.f.WriteTo(io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("WriteTo error %v, want one containing %q", err, c.want)
			}
			if err := WriteFile(path, c.f); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("WriteFile error %v, want one containing %q", err, c.want)
			}
		})
	}
	after, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("failed writes changed the existing file (err %v)", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("failed writes left files behind: %v (err %v)", entries, err)
	}
}
