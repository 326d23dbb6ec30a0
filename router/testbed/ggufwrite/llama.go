package ggufwrite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// LlamaOptions sizes a runnable random-weight llama model. Zero fields take
// their defaults.
type LlamaOptions struct {
	Width         int    // n_embd, default 64
	Blocks        int    // n_layer, default 2
	FFN           int    // n_ff, default 4*Width
	Heads         int    // n_head, default 4
	HeadsKV       int    // n_head_kv, default Heads
	ContextLength int    // training context, default 2048
	Seed          int64  // seed of the random weights
	Name          string // general.name, default "ggufwrite llama <Width>x<Blocks>"
	ChatTemplate  string // tokenizer.chat_template, default DefaultChatTemplate (chatml)
}

// shape is the hyperparameters of a llama-like model.
type shape struct {
	embd, blocks, ff, heads, headsKV, vocab int
}

func (s shape) validate() error {
	switch {
	case s.embd <= 0, s.blocks <= 0, s.ff <= 0, s.heads <= 0, s.headsKV <= 0:
		return fmt.Errorf("model dimensions must be positive: width %d, blocks %d, ffn %d, heads %d, heads_kv %d",
			s.embd, s.blocks, s.ff, s.heads, s.headsKV)
	case s.embd%s.heads != 0:
		return fmt.Errorf("width %d is not a multiple of heads %d", s.embd, s.heads)
	case (s.embd/s.heads)%2 != 0:
		return fmt.Errorf("head size %d (width %d / heads %d) must be even for RoPE", s.embd/s.heads, s.embd, s.heads)
	case s.heads%s.headsKV != 0:
		return fmt.Errorf("heads %d is not a multiple of heads_kv %d", s.heads, s.headsKV)
	}
	return nil
}

func (s shape) headDim() int { return s.embd / s.heads }

// tensor is one weight of a llama-like model, before its data is chosen.
type tensor struct {
	name  string
	shape []uint64
	norm  bool // a 1-D norm weight
}

// tensors lists the weights llama.cpp's llama architecture loads, with
// shapes in GGUF order (ne0 first).
func (s shape) tensors() []tensor {
	e, ff, v := uint64(s.embd), uint64(s.ff), uint64(s.vocab)
	gqa := uint64(s.headDim() * s.headsKV)
	ts := []tensor{
		{name: "token_embd.weight", shape: []uint64{e, v}},
		{name: "output_norm.weight", shape: []uint64{e}, norm: true},
		{name: "output.weight", shape: []uint64{e, v}},
	}
	for b := range s.blocks {
		p := fmt.Sprintf("blk.%d.", b)
		ts = append(ts,
			tensor{name: p + "attn_norm.weight", shape: []uint64{e}, norm: true},
			tensor{name: p + "attn_q.weight", shape: []uint64{e, e}},
			tensor{name: p + "attn_k.weight", shape: []uint64{e, gqa}},
			tensor{name: p + "attn_v.weight", shape: []uint64{e, gqa}},
			tensor{name: p + "attn_output.weight", shape: []uint64{e, e}},
			tensor{name: p + "ffn_norm.weight", shape: []uint64{e}, norm: true},
			tensor{name: p + "ffn_gate.weight", shape: []uint64{e, ff}},
			tensor{name: p + "ffn_up.weight", shape: []uint64{e, ff}},
			tensor{name: p + "ffn_down.weight", shape: []uint64{ff, e}},
		)
	}
	return ts
}

// archKVs returns the <arch>.* hyperparameter keys.
func (s shape) archKVs(arch string, ctx int) []KV {
	return []KV{
		{arch + ".context_length", uint32(ctx)},
		{arch + ".embedding_length", uint32(s.embd)},
		{arch + ".block_count", uint32(s.blocks)},
		{arch + ".feed_forward_length", uint32(s.ff)},
		{arch + ".attention.head_count", uint32(s.heads)},
		{arch + ".attention.head_count_kv", uint32(s.headsKV)},
		{arch + ".attention.layer_norm_rms_epsilon", float32(1e-5)},
		{arch + ".rope.dimension_count", uint32(s.headDim())},
		{arch + ".rope.freq_base", float32(10000)},
		{arch + ".vocab_size", uint32(s.vocab)},
	}
}

// Llama returns a runnable llama model with random F32 weights drawn from
// o.Seed. The weights are generated while the file is written, so a big model
// does not need its size in memory. Invalid options make every write fail with
// the reason.
func Llama(o LlamaOptions) *File {
	if o.Width == 0 {
		o.Width = 64
	}
	if o.Blocks == 0 {
		o.Blocks = 2
	}
	if o.FFN == 0 {
		o.FFN = 4 * o.Width
	}
	if o.Heads == 0 {
		o.Heads = 4
	}
	if o.HeadsKV == 0 {
		o.HeadsKV = o.Heads
	}
	if o.ContextLength == 0 {
		o.ContextLength = 2048
	}
	if o.Name == "" {
		o.Name = fmt.Sprintf("ggufwrite llama %dx%d", o.Width, o.Blocks)
	}
	if o.ChatTemplate == "" {
		o.ChatTemplate = DefaultChatTemplate
	}
	voc := baseVocab()
	s := shape{embd: o.Width, blocks: o.Blocks, ff: o.FFN, heads: o.Heads, headsKV: o.HeadsKV, vocab: len(voc.tokens)}
	f := &File{Alignment: defaultAlignment}
	if err := s.validate(); err != nil {
		f.err = fmt.Errorf("llama options: %w", err)
		return f
	}
	if o.ContextLength < 0 {
		f.err = errors.New("llama options: negative context length")
		return f
	}
	f.KVs = append(f.KVs,
		KV{"general.architecture", "llama"},
		KV{"general.type", "model"},
		KV{"general.name", o.Name},
		KV{"general.file_type", uint32(0)},
		KV{alignmentKey, uint32(defaultAlignment)},
	)
	f.KVs = append(f.KVs, s.archKVs("llama", o.ContextLength)...)
	f.KVs = append(f.KVs, voc.kvs(o.ChatTemplate)...)

	ones := onesF32(o.Width)
	for i, t := range s.tensors() {
		ft := Tensor{Name: t.name, Shape: t.shape, Type: GGMLTypeF32}
		if t.norm {
			ft.Data = ones
		} else {
			n := t.shape[0] * t.shape[1]
			ft.Fill = randomFill(n, float32(1/math.Sqrt(float64(t.shape[0]))), o.Seed, uint64(i))
		}
		f.Tensors = append(f.Tensors, ft)
	}
	return f
}

// onesF32 returns n little-endian float32 ones.
func onesF32(n int) []byte {
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(1))
	}
	return b
}

// WriteLlama writes Llama(o) to path.
func WriteLlama(path string, o LlamaOptions) error {
	return WriteFile(path, Llama(o))
}
