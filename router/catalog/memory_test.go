package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// writeArch writes a sparse model of o into a temporary folder and returns its path.
func writeArch(t *testing.T, o ggufwrite.ArchOptions) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), o.Arch+".gguf")
	if err := ggufwrite.WriteArch(path, o); err != nil {
		t.Fatal(err)
	}
	return path
}

// estimateFile is the catalog's estimate of the model at path run with p.
func estimateFile(t *testing.T, path string, p EstimateParams) Estimate {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	est, _, err := EstimateParts([]HeaderPart{{R: f, Size: st.Size()}}, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	return est
}

// A model without output.weight multiplies by token_embd for its logits: the tensor is held once, so
// the tied model needs exactly one output matrix less than the untied one.
func TestEstimateTiedOutputCountedOnce(t *testing.T) {
	o := ggufwrite.ArchOptions{Arch: "llama", Vocab: 128256, Embedding: 256}
	untied := estimateFile(t, writeArch(t, o), EstimateParams{ContextSize: 4096})
	o.Tied = true
	tied := estimateFile(t, writeArch(t, o), EstimateParams{ContextSize: 4096})
	if got, want := untied.RAM-tied.RAM, int64(256*128256*2); got != want {
		t.Fatalf("untied − tied = %d bytes, want the output matrix, %d", got, want)
	}
}

// llama.cpp's output buffer holds one row of logits per slot, not vocabulary × 512 floats: a thin
// model with gemma3's 262,144-token vocabulary needs its weights plus well under 100 MiB at 4k.
func TestEstimateVocabularyTermsAreSmall(t *testing.T) {
	path := writeArch(t, ggufwrite.ArchOptions{Arch: "gemma3", Vocab: 262144, Embedding: 256, HeadDim: 64, Tied: true})
	st, _ := os.Stat(path)
	est := estimateFile(t, path, EstimateParams{ContextSize: 4096})
	if extra := est.RAM - st.Size(); extra <= 0 || extra > 100<<20 {
		t.Fatalf("estimate %d MiB for a %d MiB file: %+d MiB beyond the weights", est.RAM>>20, st.Size()>>20, extra>>20)
	}
	terms, err := FileTerms(path, EstimateParams{ContextSize: 4096, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if terms.Output != 262144*4 {
		t.Fatalf("output buffer %d bytes, want one row of logits (%d)", terms.Output, 262144*4)
	}
}

// Without a GPU (the service passes GPULayers 0) nothing is on a GPU; with one, the layers, their
// cache and the compute buffer are.
func TestEstimateDevices(t *testing.T) {
	path := writeArch(t, ggufwrite.ArchOptions{Arch: "qwen3", Vocab: 151936, Blocks: 4, Tied: true})
	cpu := estimateFile(t, path, EstimateParams{ContextSize: 4096})
	if cpu.VRAM != 0 || cpu.GPULayers != 0 {
		t.Fatalf("CPU only: %+v", cpu)
	}
	gpu := estimateFile(t, path, EstimateParams{ContextSize: 4096, GPULayers: -1})
	if gpu.VRAM <= 0 || gpu.GPULayers != 5 || gpu.RAM >= cpu.RAM {
		t.Fatalf("all layers offloaded: %+v (CPU only %+v)", gpu, cpu)
	}
}

// flash_attn "auto" is on, as llama.cpp resolves it on the CPU; "off" sizes the attention scores.
func TestEstimateFlashAttnAuto(t *testing.T) {
	path := writeArch(t, ggufwrite.ArchOptions{Arch: "llama", Vocab: 32000, Blocks: 2})
	auto := estimateFile(t, path, EstimateParams{ContextSize: 32768})
	on := estimateFile(t, path, EstimateParams{ContextSize: 32768, FlashAttn: "on"})
	off := estimateFile(t, path, EstimateParams{ContextSize: 32768, FlashAttn: "off"})
	if auto != on || off == on {
		t.Fatalf("auto %+v, on %+v, off %+v", auto, on, off)
	}
	ton, _ := FileTerms(path, EstimateParams{ContextSize: 32768, FlashAttn: "on"})
	toff, _ := FileTerms(path, EstimateParams{ContextSize: 32768, FlashAttn: "off"})
	// Without flash attention llama.cpp reserves the scores of a batch against the whole cache.
	if scores := int64(32768 * 512 * 4 * 4); toff.Reserved < scores || ton.Reserved >= scores {
		t.Fatalf("reserved compute: on %d, off %d; the scores alone are %d", ton.Reserved, toff.Reserved, scores)
	}
}

// The KV cache layer by layer: gemma3's local layers hold their window (per slot, plus a batch),
// lfm2's conv layers hold a conv state per slot, an encoder holds none.
func TestEstimateCacheLayers(t *testing.T) {
	gemma := writeArch(t, ggufwrite.ArchOptions{Arch: "gemma3", Vocab: 32000, Blocks: 6, Heads: 4, HeadsKV: 1, HeadDim: 256, SlidingWindow: 512})
	terms, err := FileTerms(gemma, EstimateParams{ContextSize: 32768, Parallel: 1, FlashAttn: "on"})
	if err != nil {
		t.Fatal(err)
	}
	row := int64(2 * 256 * 2) // one cell of K and V, F16, one KV head of 256
	if want := row * (5*1024 + 32768); terms.KV != want {
		t.Fatalf("gemma3 KV %d, want 5 local layers × 1024 cells + 1 global × 32768 = %d", terms.KV, want)
	}
	lfm := writeArch(t, ggufwrite.ArchOptions{Arch: "lfm2", Vocab: 32000, Blocks: 6, Embedding: 256, Heads: 4, HeadsKV: 4})
	terms, err = FileTerms(lfm, EstimateParams{ContextSize: 4096, Parallel: 2, CacheType: "q8_0"})
	if err != nil {
		t.Fatal(err)
	}
	attn := 2 * int64(4096) * (2 * 256 / 32 * 34) // 2 attention layers, K and V in q8_0 blocks
	conv := 4 * int64(2*256*4) * 2                // 4 conv layers, (l_cache−1) × n_embd F32, 2 slots
	if terms.KV != attn+conv {
		t.Fatalf("lfm2 KV %d, want %d attention + %d conv state", terms.KV, attn, conv)
	}
	bert := writeArch(t, ggufwrite.ArchOptions{Arch: "nomic-bert", Vocab: 30522})
	if terms, err = FileTerms(bert, EstimateParams{ContextSize: 2048}); err != nil || terms.KV != 0 {
		t.Fatalf("nomic-bert: %+v %v; an encoder has no KV cache", terms, err)
	}
}

// A header without the hyperparameters the estimate needs is an error that names the key.
func TestEstimateUnsized(t *testing.T) {
	f := ggufwrite.Arch(ggufwrite.ArchOptions{Arch: "llama", Vocab: 32000})
	for i, kv := range f.KVs {
		if kv.Key == "llama.embedding_length" {
			f.KVs = append(f.KVs[:i], f.KVs[i+1:]...)
			break
		}
	}
	path := filepath.Join(t.TempDir(), "broken.gguf")
	if err := ggufwrite.WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	fh, _ := os.Open(path)
	defer fh.Close()
	st, _ := fh.Stat()
	_, _, err := EstimateParts([]HeaderPart{{R: fh, Size: st.Size()}}, nil, EstimateParams{ContextSize: 4096})
	if err == nil || !strings.Contains(err.Error(), "embedding_length") {
		t.Fatalf("err = %v, want one naming embedding_length", err)
	}
}
