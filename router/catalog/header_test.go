package catalog

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// TestHeaderMatchesParser holds the catalog's bounded header reader to gguf-parser-go's own:
// for well-formed files both must build the same GGUFFile.
func TestHeaderMatchesParser(t *testing.T) {
	dir := t.TempDir()
	allTypes := []ggufwrite.KV{
		{Key: "test.u8", Value: uint8(200)}, {Key: "test.i8", Value: int8(-3)},
		{Key: "test.u16", Value: uint16(60000)}, {Key: "test.i16", Value: int16(-300)},
		{Key: "test.u32", Value: uint32(1 << 31)}, {Key: "test.i32", Value: int32(-1 << 30)},
		{Key: "test.u64", Value: uint64(1 << 63)}, {Key: "test.i64", Value: int64(-1 << 62)},
		{Key: "test.f32", Value: float32(1.5)}, {Key: "test.f64", Value: float64(-2.25)},
		{Key: "test.bool", Value: true}, {Key: "test.string", Value: "  padded value \n"},
		{Key: "test.strings", Value: []string{"a", " b ", ""}}, {Key: "test.i32s", Value: []int32{1, -2}},
		{Key: "test.u32s", Value: []uint32{7}}, {Key: "test.f32s", Value: []float32{0.5, 1}},
		{Key: "llama.attention.head_count_kv", Value: []int32{4, 2}},
		{Key: "llama.feed_forward_length", Value: []uint32{128, 256}},
		{Key: "  spaced.key ", Value: "x"},
	}
	files := map[string][]string{}
	write := func(name string, f *ggufwrite.File) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, f)
		return p
	}
	files["tiny"] = []string{write("tiny.gguf", ggufwrite.Header(tiny(ggufwrite.HeaderOptions{FileType: 15})))}
	files["7b"] = []string{write("7b.gguf", ggufwrite.Header(ggufwrite.HeaderOptions{FileType: 1}))}
	files["all types"] = []string{write("types.gguf", ggufwrite.Header(tiny(ggufwrite.HeaderOptions{ExtraKVs: allTypes})))}
	aligned := ggufwrite.Header(tiny(ggufwrite.HeaderOptions{ExtraKVs: []ggufwrite.KV{{Key: "general.alignment", Value: uint32(64)}}}))
	aligned.Alignment = 64
	files["aligned"] = []string{write("aligned.gguf", aligned)}
	var shards []string
	for i := range 3 {
		shards = append(shards, write(fmt.Sprintf("split-%05d-of-00003.gguf", i+1),
			ggufwrite.Header(tiny(ggufwrite.HeaderOptions{Blocks: 5, SplitNo: i, SplitCount: 3}))))
	}
	files["split"] = shards
	proj := filepath.Join(dir, "mmproj.gguf")
	writeProjector(t, proj, 64)
	files["projector"] = []string{proj}
	v2 := write("v2.gguf", ggufwrite.Header(tiny(ggufwrite.HeaderOptions{})))
	patchFile(t, v2, 4, 2)
	files["version 2"] = []string{v2}
	llama := filepath.Join(dir, "llama.gguf")
	if err := ggufwrite.WriteLlama(llama, ggufwrite.LlamaOptions{}); err != nil {
		t.Fatal(err)
	}
	files["runnable llama"] = []string{llama}

	for name, paths := range files {
		t.Run(name, func(t *testing.T) {
			want, err := gguf.ParseGGUFFile(paths[0], gguf.SkipLargeMetadata())
			if err != nil {
				t.Fatalf("gguf-parser-go: %v", err)
			}
			var parts []*fileHeader
			for _, p := range paths {
				fh, err := readFile(p)
				if err != nil {
					t.Fatalf("readFile(%s): %v", p, err)
				}
				parts = append(parts, fh)
			}
			got, err := assemble(parts)
			if err != nil {
				t.Fatalf("assemble: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("headers differ\n got %+v\nwant %+v", got.Header, want.Header)
				if !reflect.DeepEqual(got.TensorInfos, want.TensorInfos) {
					t.Errorf("tensor infos differ")
				}
				t.Errorf("got sizes %v %v %v %v, want %v %v %v %v", got.Size, got.ModelSize, got.Padding, got.TensorDataStartOffset,
					want.Size, want.ModelSize, want.Padding, want.TensorDataStartOffset)
			}
			if ew, eg := want.EstimateLLaMACppRun(gguf.WithLLaMACppContextSize(2048)), got.EstimateLLaMACppRun(gguf.WithLLaMACppContextSize(2048)); !reflect.DeepEqual(ew, eg) {
				t.Error("estimates differ")
			}
		})
	}
}

// patchFile overwrites a little-endian uint32 at off.
func patchFile(t *testing.T, path string, off int64, v uint32) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}
