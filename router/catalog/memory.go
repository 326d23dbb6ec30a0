package catalog

// The first memory estimate of a model: what llama-server (llama.cpp 0.7.0) holds for it with the
// flags Llamatray passes, term by term, each sized the way llama.cpp allocates it. Only the GGUF
// header is read (gguf-parser-go decodes its hyperparameters); once the model has run, the
// footprint the engine learns replaces this figure.

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"
)

// Flags llama-server 0.7.0 uses when Llamatray leaves them out.
const (
	// autoSlots is -np auto: four slots sharing one unified cache of -c cells.
	autoSlots = 4
	// uBatch is -ub (and -b for embedding models, which llama-server sets to -ub): the tokens of one
	// graph evaluation, which sizes the compute buffer.
	uBatch = 512
	// cellPad is the KV cache's padding: llama.cpp rounds its cell count up to 256.
	cellPad = 256
)

// Sizes outside the tensors, measured on llama-server 0.7.0 (Linux, CPU backend): the process with
// its libraries, threads and HTTP server before any model, and the vocabulary it keeps per token
// (the token text, its score and attributes, the text→id map and the piece cache) and per BPE merge.
const (
	processBase   = 19 << 20
	perToken      = 176
	perMerge      = 96
	projectorWork = 64 << 20 // a projector's compute buffer for one image (clip reserves for its largest)
)

// memoryTerms is the estimate term by term, in bytes.
type memoryTerms struct {
	weights  int64 // every tensor of the file, once: mmapped and touched at load
	kv       int64 // attention KV cache and recurrent state
	output   int64 // the logits/embeddings of the outputs of one batch
	compute  int64 // the part of the compute buffer a first full batch touches
	reserved int64 // the compute buffer as llama.cpp reserves it (its log's "compute buffer size")
	host     int64 // the process and the vocabulary
	layers   int   // repeating layers (for the offload split)
	flash    bool  // flash attention as resolved
}

func (t memoryTerms) total() int64 { return t.weights + t.kv + t.output + t.compute + t.host }

// errUnsized is a model whose header lacks what the estimate needs.
var errUnsized = errors.New("cannot size this model")

// modelTerms sizes model m run with p. A header without the hyperparameters the terms need is an
// error that says which one is missing.
func modelTerms(m *header, p EstimateParams, ctx int) (memoryTerms, error) {
	var t memoryTerms
	err := guard(func() error {
		a := m.gf.Architecture()
		n := int(a.BlockCount)
		switch {
		case a.EmbeddingLength == 0:
			return fmt.Errorf("%w: %s.embedding_length is missing", errUnsized, m.arch)
		case n <= 0:
			return fmt.Errorf("%w: %s.block_count is missing", errUnsized, m.arch)
		}
		t.layers = n
		// Weights: every tensor as the file holds it. A model without output.weight multiplies by
		// token_embd for its logits; that tensor is in the file once, so it counts once.
		t.weights = clampBytes(uint64(m.gf.TensorInfos.Bytes()))

		slots := p.Parallel
		unified := slots <= 0 // -np auto: one cache shared by the slots
		if slots <= 0 {
			slots = autoSlots
		}
		// flash_attn "auto" is on: the CPU backend (and the GPU backends llama.cpp ships) runs it.
		t.flash = p.FlashAttn != "off"
		vocab := int64(a.VocabularyLength)
		embd := int64(a.EmbeddingLength)
		encoder := !a.AttentionCausal || isEncoder(m.arch)

		// KV cache, layer by layer.
		cells := roundUp(int64(ctx), cellPad)
		t.kv = kvBytes(a, p.CacheType, cells, int64(slots), unified, encoder)

		// Output buffer: llama.cpp reserves room for one output per slot: its logits (n_vocab floats)
		// and, for an embedding model (Llamatray passes --embeddings), its embedding (n_embd floats).
		perOut := vocab
		if m.pooling {
			perOut += embd
		}
		t.output = perOut * int64(slots) * 4

		ub := int64(min(uBatch, ctx))
		if encoder {
			ub = int64(uBatch) // llama-server sets -b to -ub for embeddings: a batch is one graph
		}
		kvMax := cells
		if !unified && slots > 1 {
			kvMax = roundUp(cells/int64(slots), cellPad)
		}
		if encoder {
			kvMax = ub // an encoder attends within its batch
		}
		g := graph{a: a, gated: gated(m), ub: ub, nOut: int64(slots), vocab: vocab, flash: t.flash}
		t.reserved = g.bytes(kvMax)
		// What a first full batch touches: the graph at the start of the context, where the cache
		// holds one batch (the rest of the reserved buffer stays untouched, so not resident).
		t.compute = g.touched(min(kvMax, roundUp(ub, cellPad)), kvMax)

		merges := int64(0)
		if kv, ok := m.gf.Header.MetadataKV.Get("tokenizer.ggml.merges"); ok && kv.ValueType == gguf.GGUFMetadataValueTypeArray {
			merges = int64(min(kv.ValueArray().Len, math.MaxInt32))
		}
		t.host = processBase + vocab*perToken + merges*perMerge
		return nil
	})
	return t, err
}

// isEncoder is an architecture llama.cpp runs without a KV cache (non-causal encoders).
func isEncoder(arch string) bool {
	switch arch {
	case "bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "jina-bert-v3", "neo-bert", "modern-bert", "t5encoder", "gemma-embedding":
		return true
	}
	return strings.HasSuffix(arch, "-bert")
}

// kvBytes is the KV cache and recurrent state: for each attention layer, keys and values of every
// cell in the cache type (a sliding-window layer holds its window per slot plus one batch, when that
// is less than the context); for each recurrent layer (conv or SSM state), one state per slot in F32.
func kvBytes(a gguf.GGUFArchitecture, cacheType string, cells, slots int64, unified, encoder bool) int64 {
	if encoder {
		return 0
	}
	typ, ok := cacheTypes[cacheType]
	if !ok {
		typ = gguf.GGMLTypeF16
	}
	n := int(a.BlockCount)
	hd := int64(a.EmbeddingLength / max(a.AttentionHeadCount, 1))
	kLen, vLen := int64(a.AttentionKeyLength), int64(a.AttentionValueLength)
	kLen = cmp.Or(kLen, hd)
	vLen = cmp.Or(vLen, hd)
	swaCells := cells
	if w := int64(a.AttentionSlidingWindow); w > 0 {
		per := w + uBatch
		if unified {
			per = w*slots + uBatch
		} else {
			per *= slots
		}
		swaCells = min(cells, roundUp(per, cellPad))
	}
	var total int64
	for il := range n {
		hkv := int64(a.AttentionHeadCountKV)
		if il < len(a.AttentionHeadCountKVs) {
			hkv = int64(a.AttentionHeadCountKVs[il])
		}
		if hkv == 0 { // a recurrent layer
			total += recurrentBytes(a) * slots
			continue
		}
		c := cells
		if il < len(a.AttentionSlidingWindowLayers) && a.AttentionSlidingWindowLayers[il] {
			c = swaCells
		}
		total += rowBytes(typ, hkv*kLen)*c + rowBytes(typ, hkv*vLen)*c
	}
	if a.AttentionRecurrent && len(a.AttentionHeadCountKVs) == 0 && a.ShortConvLCache == 0 {
		// A purely recurrent model (Mamba, RWKV-like): every layer holds state only.
		total = recurrentBytes(a) * slots * int64(n)
	}
	return total
}

// recurrentBytes is one layer's state for one sequence, in F32: a short conv keeps its last
// l_cache-1 inputs; an SSM keeps its conv window and its state.
func recurrentBytes(a gguf.GGUFArchitecture) int64 {
	if l := int64(a.ShortConvLCache); l > 0 {
		return (l - 1) * int64(a.EmbeddingLength) * 4
	}
	inner, st, g := int64(a.SSMInnerSize), int64(a.SSMStateSize), int64(a.SSMGroupCount)
	conv := max(int64(a.SSMConvolutionKernel)-1, 0) * (inner + 2*g*st)
	return (conv + st*inner) * 4
}

// graph is the evaluation llama.cpp reserves its compute buffer for: a batch of ub tokens with nOut
// outputs (one per slot), flash attention on or off; gated is a feed-forward with a gate.
type graph struct {
	a               gguf.GGUFArchitecture
	gated           bool
	ub, nOut, vocab int64
	flash           bool
}

// gated is whether m's feed-forward has a gate (SwiGLU and kin; phi3 fuses it into ffn_up).
func gated(m *header) bool {
	if m.arch == "phi3" {
		return true
	}
	for _, ti := range m.gf.TensorInfos {
		if strings.HasPrefix(ti.Name, "blk.0.ffn_gate") {
			return true
		}
	}
	return false
}

// bytes sizes llama.cpp's compute buffer for g against kv cells: the attention mask (kv × ub; F16
// with flash attention, F32 without), alive for the whole graph, beside the largest phase of a layer:
//   - feed-forward: the gate and up projections, the activation and their product (ub × n_ff each,
//     F32; a MoE layer's for each expert a token uses) and the residual stream;
//   - attention without flash attention: the scores, kv × ub per head in F32, with Q, K, V;
//     with flash attention: Q, K, V and the output;
//   - output: the logits of nOut outputs.
func (g graph) bytes(kv int64) int64 {
	a, ub := g.a, g.ub
	e := int64(a.EmbeddingLength)
	ff := int64(0)
	for _, f := range a.FeedForwardLength {
		ff = max(ff, int64(f))
	}
	ffn := 4 * ff * ub * 4
	if !g.gated {
		ffn = 5 * ff * ub * 4 / 2 // up, activation and their successor, partly in place (measured)
	}
	if a.ExpertCount > 0 && a.ExpertFeedForwardLength > 0 {
		ffn = 4 * int64(a.ExpertFeedForwardLength) * int64(max(a.ExpertUsedCount, 1)) * ub * 4
	}
	heads := int64(max(a.AttentionHeadCount, 1))
	hd := e / heads
	if a.AttentionKeyLength > 0 {
		hd = int64(a.AttentionKeyLength)
	}
	stream := e * ub * 4
	qkv := 3 * heads * hd * ub * 4
	mask, attn := kv*ub*2, qkv+stream
	if !g.flash {
		mask, attn = kv*ub*4, kv*ub*heads*4+qkv+2*stream
	}
	out := g.nOut*g.vocab*4 + stream
	return mask + max(ffn+stream, attn, out)
}

// touched is the part of the compute buffer that is resident after a first full batch, whose
// graph sees a cache holding that batch only (small: kv cells) where the buffer was reserved for
// full: the tensors keep the offsets of the largest graph, so with flash attention nearly all of it
// is touched (the whole buffer is counted); without it the scores, sized by the cache, stay mostly
// untouched: the small graph's phases, plus a quarter of its attention phase that lands beside the
// feed-forward tensors rather than over them (measured on llama-server 0.7.0).
func (g graph) touched(small, full int64) int64 {
	if g.flash {
		return g.bytes(full)
	}
	scores := g
	scores.nOut = 0
	return g.bytes(small) + scores.bytes(small)/4
}

// rowBytes is the size of n values of type t.
func rowBytes(t gguf.GGMLType, n int64) int64 {
	tt, ok := t.Trait()
	if !ok || tt.BlockSize == 0 {
		return n * 2
	}
	return n / int64(tt.BlockSize) * int64(tt.TypeSize)
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }

// contextFor is the context llama-server runs m with: -c, else (0) its trained context, else 4096.
func contextFor(m *header, p EstimateParams) int {
	ctx := p.ContextSize
	if ctx <= 0 {
		ctx = m.ctxLen
	}
	if ctx <= 0 {
		ctx = 4096
	}
	return min(ctx, math.MaxInt32)
}

// SettingsError is a setting the model cannot run with, found before any load.
type SettingsError struct {
	Key    string // the config key: "cache_type"
	Reason string
}

func (e *SettingsError) Error() string { return e.Key + ": " + e.Reason }

// quantBlock is the block size of llama.cpp's quantized KV cache types; a head must be a whole
// number of blocks.
const quantBlock = 32

// checkCacheType refuses a quantized KV cache for a model whose key or value heads are not a
// whole number of its blocks, as llama-server does when it creates the context.
func checkCacheType(h *header, cacheType string) error {
	switch cacheType {
	case "", "f16", "f32", "bf16":
		return nil
	}
	var k, v uint32
	if err := guard(func() error {
		a := h.gf.Architecture()
		k, v = a.AttentionKeyLength, a.AttentionValueLength
		return nil
	}); err != nil {
		return nil // unknown: llama-server will say
	}
	for _, d := range []struct {
		name string
		n    uint32
	}{{"key", k}, {"value", v}} {
		if d.n > 0 && d.n%quantBlock != 0 {
			return &SettingsError{Key: "cache_type", Reason: fmt.Sprintf("a %s cache stores blocks of %d, and this model's %s heads have %d values; use f16", cacheType, quantBlock, d.name, d.n)}
		}
	}
	return nil
}

// EstimateWith estimates the memory model id needs when run with p, from the headers the last scan
// read (no file is opened): what a settings editor shows before the settings are saved. Settings
// the model cannot run with are a *SettingsError; so is a draft (p.Draft) that is missing or whose
// vocabulary does not match. A draft's memory is part of the estimate (vocab.go).
func (c *Catalog) EstimateWith(id string, p EstimateParams) (Estimate, error) {
	m, ok := c.Lookup(id)
	if !ok {
		return Estimate{}, fmt.Errorf("model %q is not in the catalog", id)
	}
	c.mu.Lock()
	r, proj := c.cache[m.Path], c.cache[m.Mmproj] // no file has the path "": no projector
	c.mu.Unlock()
	if r == nil || r.h == nil {
		return Estimate{}, fmt.Errorf("model %q: its header was not read", id)
	}
	if err := checkCacheType(r.h, p.CacheType); err != nil {
		return Estimate{}, err
	}
	var ph *header
	if proj != nil {
		ph = proj.h
	}
	est, err := estimate(r.h, ph, p)
	if err != nil || p.Draft == "" {
		return est, err
	}
	d, found := c.snap.Load().lookup(p.Draft)
	if !found {
		return est, &SettingsError{Key: "draft", Reason: (&DraftMissingError{Model: m.ID, Draft: p.Draft}).Error()}
	}
	if err := DraftVocab(m.ID, m.Vocab, d.ID, d.Vocab); err != nil {
		return est, &SettingsError{Key: "draft", Reason: err.Error()}
	}
	m.Estimate = est
	if err := c.addDraft(&m, d, p); err != nil {
		return est, err
	}
	return m.Estimate, nil
}
