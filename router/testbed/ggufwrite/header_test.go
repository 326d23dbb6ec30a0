package ggufwrite

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	parser "github.com/gpustack/gguf-parser-go"
)

// rawSplitNo returns the split.no value from a file's header bytes.
func rawSplitNo(path string) (uint16, error) {
	fh, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	raw, err := io.ReadAll(io.LimitReader(fh, 2<<20)) // the header is well within this
	if err != nil {
		return 0, err
	}
	key := []byte("split.no")
	i := bytes.Index(raw, key)
	if i < 8 || binary.LittleEndian.Uint64(raw[i-8:]) != uint64(len(key)) {
		return 0, errors.New("split.no key not found")
	}
	i += len(key)
	if binary.LittleEndian.Uint32(raw[i:]) != typeUint16 {
		return 0, errors.New("split.no is not a uint16")
	}
	return binary.LittleEndian.Uint16(raw[i+4:]), nil
}

func TestHeaderSparse(t *testing.T) {
	f := Header(HeaderOptions{FileType: 15, Name: "big"})
	if !f.Sparse {
		t.Fatal("Header did not set Sparse")
	}
	size, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "big.gguf")
	if err := WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != size {
		t.Fatalf("file is %d bytes, Size() says %d", st.Size(), size)
	}
	// 7B parameters, F16 weights: about 13.5 GB.
	if size < 13e9 || size > 14e9 {
		t.Errorf("default header declares %d bytes, want about 13.5 GB", size)
	}
	if used := diskBytes(t, path); used > 4<<20 {
		t.Errorf("sparse file of %d bytes uses %d bytes of disk", size, used)
	}
	gf := parse(t, path)
	md := gf.Metadata()
	if md.Architecture != "llama" || md.Name != "big" || md.FileType != parser.GGUFFileTypeMostlyQ4_K_M {
		t.Errorf("metadata: %+v", md)
	}
	if uint64(md.Parameters) != params(f) || params(f) < 6.7e9 || params(f) > 6.8e9 {
		t.Errorf("parameters %d, declared %d, want about 6.74e9", uint64(md.Parameters), params(f))
	}
	if int64(md.FileSize) != size {
		t.Errorf("parser file size %d, want %d", int64(md.FileSize), size)
	}
	ar := gf.Architecture()
	if ar.BlockCount != 32 || ar.EmbeddingLength != 4096 || ar.MaximumContextLength != 4096 || ar.VocabularyLength != 32000 {
		t.Errorf("architecture: %+v", ar)
	}
	if gf.Header.TensorCount != 3+9*32 {
		t.Errorf("tensor count %d, want %d", gf.Header.TensorCount, 3+9*32)
	}
	if tk := gf.Tokenizer(); tk.TokensLength != 32000 || tk.Model != "llama" {
		t.Errorf("tokenizer: %+v", tk)
	}
	for _, ti := range gf.TensorInfos {
		want := parser.GGMLTypeF16
		if ti.Name == "output_norm.weight" || len(ti.Dimensions) == 1 {
			want = parser.GGMLTypeF32
		}
		if ti.Type != want {
			t.Errorf("tensor %s type %v, want %v", ti.Name, ti.Type, want)
		}
	}
}

func TestHeaderArchAndExtraKVs(t *testing.T) {
	f := Header(HeaderOptions{
		Arch: "qwen2", Embedding: 256, Blocks: 4, FFN: 512, Heads: 8, HeadsKV: 2, Vocab: 1000,
		ContextLength: 32768, ChatTemplate: "{{ messages }}",
		ExtraKVs: []KV{{"general.name", "renamed"}, {"general.license", "mit"}},
	})
	path := filepath.Join(t.TempDir(), "q.gguf")
	if err := WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	gf := parse(t, path)
	md := gf.Metadata()
	if md.Architecture != "qwen2" || md.Name != "renamed" || md.License != "mit" || md.FileType != parser.GGUFFileTypeMostlyF32 {
		t.Errorf("metadata: %+v", md)
	}
	ar := gf.Architecture()
	if ar.BlockCount != 4 || ar.AttentionHeadCountKV != 2 || ar.MaximumContextLength != 32768 {
		t.Errorf("architecture: %+v", ar)
	}
	if kv := mustKV(t, gf, "tokenizer.chat_template"); kv.ValueString() != "{{ messages }}" {
		t.Errorf("chat template %q", kv.ValueString())
	}
}

func TestHeaderSplit(t *testing.T) {
	dir := t.TempDir()
	const count = 3
	o := HeaderOptions{Embedding: 512, Blocks: 4, FFN: 1024, Heads: 8, Vocab: 2000, SplitCount: count, FileType: 1}
	total := len(shape{embd: 512, blocks: 4, ff: 1024, heads: 8, headsKV: 8}.tensors())
	var sum int64
	seen := map[string]bool{}
	for no := range count {
		o.SplitNo = no
		f := Header(o)
		path := filepath.Join(dir, fmt.Sprintf("model-%05d-of-%05d.gguf", no+1, count))
		if err := WriteFile(path, f); err != nil {
			t.Fatal(err)
		}
		size, _ := f.Size()
		sum += size
		// Read each split alone (a name without the shard pattern).
		alone := filepath.Join(dir, fmt.Sprintf("alone-%d.gguf", no))
		if err := os.Link(path, alone); err != nil {
			t.Fatal(err)
		}
		gf := parse(t, alone)
		if err := os.Remove(alone); err != nil {
			t.Fatal(err)
		}
		// gguf-parser-go drops split.no while reading, so find it in the bytes:
		// key, type tag 2 (uint16), value.
		if got, err := rawSplitNo(path); err != nil || got != uint16(no) {
			t.Errorf("split %d: split.no %d (%v)", no, got, err)
		}
		if kv := mustKV(t, gf, "split.count"); kv.ValueUint16() != count {
			t.Errorf("split %d: split.count %d", no, kv.ValueUint16())
		}
		if kv := mustKV(t, gf, "split.tensors.count"); kv.ValueInt32() != int32(total) {
			t.Errorf("split %d: split.tensors.count %d, want %d", no, kv.ValueInt32(), total)
		}
		_, hasArch := gf.Header.MetadataKV.Get("general.architecture")
		if hasArch != (no == 0) {
			t.Errorf("split %d: general.architecture present = %v, want only in split 0", no, hasArch)
		}
		if len(gf.TensorInfos) == 0 {
			t.Errorf("split %d holds no tensors", no)
		}
		for _, ti := range gf.TensorInfos {
			if seen[ti.Name] {
				t.Errorf("tensor %s in two splits", ti.Name)
			}
			seen[ti.Name] = true
		}
	}
	if len(seen) != total {
		t.Errorf("splits hold %d tensors, want %d", len(seen), total)
	}
	// Reading the first shard by its name reads all three.
	gf := parse(t, filepath.Join(dir, fmt.Sprintf("model-%05d-of-%05d.gguf", 1, count)))
	if gf.Header.TensorCount != uint64(total) || int64(gf.Size) != sum || gf.Metadata().Architecture != "llama" {
		t.Errorf("merged shards: %d tensors, %d bytes; want %d tensors, %d bytes", gf.Header.TensorCount, int64(gf.Size), total, sum)
	}
}
