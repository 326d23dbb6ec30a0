package catalog

import (
	"fmt"
	"math"
	"path/filepath"
	"runtime/debug"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"
)

// header is what the catalog keeps of a parsed model or projector file.
type header struct {
	gf           *gguf.GGUFFile
	typ          string // "model", "projector", "adapter", "imatrix"
	arch         string
	name         string
	quant        string
	params       int64
	ctxLen       int
	embdLen      int  // <arch>.embedding_length
	pooling      bool // <arch>.pooling_type set: an embedding model
	rerank       bool // <arch>.pooling_type 4 (rank): a reranker
	chatTemplate bool
	vocab        Vocab
}

// panicError is a panic of the GGUF parser, recovered.
type panicError struct {
	v     any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("unreadable header: %v", e.v) }

// guard runs f, turning a panic of gguf-parser-go's metadata or estimate code (which panics on
// some unexpected value types) into a *panicError.
func guard(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{v: v, stack: debug.Stack()}
		}
	}()
	return f()
}

// parseHeader reads the model at path, with files all of its shards in order.
func parseHeader(path string, files []string) (*header, error) {
	parts := make([]*fileHeader, len(files))
	for i, f := range files {
		fh, err := readFile(f)
		if err != nil {
			if len(files) > 1 {
				return nil, fmt.Errorf("%s: %w", filepath.Base(f), err)
			}
			return nil, err
		}
		parts[i] = fh
	}
	return headerOf(parts)
}

// headerOf describes the model whose files (shards in order) have the headers parts.
func headerOf(parts []*fileHeader) (*header, error) {
	var h *header
	err := guard(func() error {
		gf, err := assemble(parts)
		if err != nil {
			return err
		}
		h = describe(gf)
		h.vocab = vocabOf(gf, parts[0].tokens)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// assemble builds the gguf-parser-go view of a model from the headers of its files, exactly as
// gguf.ParseGGUFFile(path, gguf.SkipLargeMetadata()) would (a test holds them equal), so that
// the parser's metadata and estimate code can run on it.
func assemble(parts []*fileHeader) (*gguf.GGUFFile, error) {
	var gf gguf.GGUFFile
	for _, fh := range parts {
		gf.Header.Magic = gguf.GGUFMagicGGUFLe
		gf.Header.Version = fh.version
		gf.Header.TensorCount += fh.nTensors
		gf.Header.MetadataKVCount += fh.nKVs
		for _, kv := range fh.kvs {
			if kv.Key == "split.no" {
				gf.Header.MetadataKVCount--
				continue
			}
			gf.Header.MetadataKV = append(gf.Header.MetadataKV, kv)
		}
		if gf.TensorInfos == nil {
			gf.TensorInfos = make(gguf.GGUFTensorInfos, 0)
		}
		gf.TensorInfos = append(gf.TensorInfos, fh.tensors...)

		align := int64(32)
		if v, ok := gf.Header.MetadataKV.Get("general.alignment"); ok {
			align = int64(v.ValueUint32())
		}
		padding := (align - fh.end%align) % align
		start := fh.end + padding
		if len(parts) == 1 {
			gf.Padding = padding
			gf.TensorDataStartOffset = start
		}
		gf.SplitPaddings = append(gf.SplitPaddings, padding)
		gf.SplitTensorDataStartOffsets = append(gf.SplitTensorDataStartOffsets, start)
		gf.Size += gguf.GGUFBytesScalar(fh.size)
		gf.SplitSizes = append(gf.SplitSizes, gguf.GGUFBytesScalar(fh.size))
		gf.ModelSize += gguf.GGUFBytesScalar(fh.size - start)
		gf.SplitModelSizes = append(gf.SplitModelSizes, gguf.GGUFBytesScalar(fh.size-start))
	}
	if len(parts) == 1 && gf.TensorDataStartOffset >= 0 && uint64(gf.TensorDataStartOffset) <= uint64(gf.Size) {
		held := uint64(gf.Size) - uint64(gf.TensorDataStartOffset)
		if want := gf.TensorInfos.Bytes(); want > held {
			return nil, fmt.Errorf("tensor data needs %d bytes but only %d follow the header (truncated file?)", want, held)
		}
	}
	gf.ModelParameters = gguf.GGUFParametersScalar(gf.TensorInfos.Elements())
	if gf.ModelParameters != 0 {
		gf.ModelBitsPerWeight = gguf.GGUFBitsPerWeightScalar(float64(gf.ModelSize) * 8 / float64(gf.ModelParameters))
	}
	return &gf, nil
}

func describe(gf *gguf.GGUFFile) *header {
	md := gf.Metadata()
	arch := gf.Architecture()
	h := &header{
		gf:      gf,
		typ:     arch.Type,
		arch:    md.Architecture,
		name:    md.Name,
		params:  int64(min(uint64(gf.ModelParameters), math.MaxInt64)),
		ctxLen:  int(min(arch.MaximumContextLength, math.MaxInt32)),
		embdLen: int(min(arch.EmbeddingLength, math.MaxInt32)),
		pooling: arch.PoolingType != 0,
		rerank:  arch.PoolingType == 4,
	}
	if kv, ok := gf.Header.MetadataKV.Get("general.file_type"); ok && kv.ValueType.IsNumeric() {
		h.quant = strings.TrimPrefix(gguf.GGUFFileType(gguf.ValueNumeric[uint32](kv)).String(), "MOSTLY_")
		if strings.HasPrefix(h.quant, "GGUFFileType(") {
			h.quant = ""
		}
	}
	if h.quant == "" && md.FileTypeDescriptor != "Unknown" {
		h.quant = md.FileTypeDescriptor
	}
	if kv, ok := gf.Header.MetadataKV.Get("tokenizer.chat_template"); ok && kv.ValueType == gguf.GGUFMetadataValueTypeString {
		h.chatTemplate = kv.ValueString() != ""
	}
	return h
}

// cacheTypes maps llama-server's KV cache type names to GGML types.
var cacheTypes = map[string]gguf.GGMLType{
	"f32": gguf.GGMLTypeF32, "f16": gguf.GGMLTypeF16, "bf16": gguf.GGMLTypeBF16, "q8_0": gguf.GGMLTypeQ8_0,
	"q4_0": gguf.GGMLTypeQ4_0, "q4_1": gguf.GGMLTypeQ4_1, "iq4_nl": gguf.GGMLTypeIQ4_NL,
	"q5_0": gguf.GGMLTypeQ5_0, "q5_1": gguf.GGMLTypeQ5_1,
}

// estimate is the memory model m needs when llama-server runs it with p, with its projector if
// any (memory.go sizes each term). On the CPU everything is host memory; with layers offloaded
// their weights, their share of the KV cache and the compute buffer go to the GPU.
func estimate(m, proj *header, p EstimateParams) (Estimate, error) {
	ctx := contextFor(m, p)
	t, err := modelTerms(m, p, ctx)
	if err != nil {
		return Estimate{}, err
	}
	out := Estimate{ContextSize: ctx, RAM: t.total()}
	if p.GPULayers != 0 {
		out = offload(m, t, p.GPULayers, out)
	}
	if proj != nil {
		w := clampBytes(uint64(proj.gf.TensorInfos.Bytes())) + projectorWork
		if p.GPULayers != 0 {
			out.VRAM += w
		} else {
			out.RAM += w
		}
	}
	return out, nil
}

// offload moves what llama.cpp puts on the GPU for gpuLayers offloaded layers (-1 = all) out of
// est.RAM: the last layers' weights and KV cache; the output layer once every block is offloaded
// (a tied output is a second copy of token_embd there, the input copy stays on the host); and the
// compute buffer, which a GPU allocates whole.
func offload(m *header, t memoryTerms, gpuLayers int, est Estimate) Estimate {
	n := t.layers
	off := n + 1
	if gpuLayers >= 0 {
		off = min(gpuLayers, n+1)
	}
	blocks := min(off, n)
	tied := true
	for _, ti := range m.gf.TensorInfos {
		tied = tied && ti.Name != "output.weight"
	}
	var moved, dup int64 // weights moved to the GPU; a tied output's second copy there
	for _, ti := range m.gf.TensorInfos {
		b := clampBytes(uint64(ti.Bytes()))
		var il int
		switch {
		case ti.Name == "output.weight":
			if off > n {
				moved += b
			}
		case ti.Name == "token_embd.weight":
			if off > n && tied {
				dup = b
			}
		default:
			if _, err := fmt.Sscanf(ti.Name, "blk.%d.", &il); err == nil && il >= n-blocks {
				moved += b
			}
		}
	}
	kv := t.kv * int64(blocks) / int64(n)
	est.VRAM = moved + dup + kv + t.reserved
	est.RAM = t.total() - moved - kv - t.compute
	est.GPULayers = off
	return est
}

func clampBytes(v uint64) int64 { return int64(min(v, math.MaxInt64)) }
