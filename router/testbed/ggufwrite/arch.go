package ggufwrite

import (
	"fmt"
	"slices"
)

// ArchOptions describes a model of one of llama.cpp's architectures with that architecture's real
// tensor layout (tied embeddings, sliding-window layers, MoE experts, conv layers, encoder-only
// blocks), for memory tests: the tensors are declared and the file is Sparse, so it has its real
// size, takes no disk, and loads (all weights zero) in a real llama-server. Zero fields take
// defaults that make a small model.
type ArchOptions struct {
	// Arch is general.architecture: llama, qwen3, qwen3moe, gemma3, phi3, lfm2, nomic-bert or
	// bert (a reranker: rank pooling and a classifier head).
	Arch      string
	Name      string // general.name, default "ggufwrite <Arch>"
	Embedding int    // n_embd, default 256
	Blocks    int    // n_layer, default 2
	FFN       int    // n_ff (per expert for MoE), default 4*Embedding
	Heads     int    // default 4
	HeadsKV   int    // default Heads
	HeadDim   int    // key and value head width, default Embedding/Heads
	Vocab     int    // default 32000; real models: 128256 (llama 3), 151936 (qwen3), 262144 (gemma3)
	// Tied leaves output.weight out: llama.cpp then multiplies by token_embd for the logits. gemma3,
	// lfm2 and the encoders always tie (they have no output matrix).
	Tied          bool
	Experts       int // qwen3moe: expert count, default 8
	ExpertsUsed   int // qwen3moe: experts per token, default 2
	SlidingWindow int // gemma3: the window of its local layers, default 512
	ContextLength int // training context, default 32768
	// Type is the type of the weight matrices: GGMLTypeF16 (default), GGMLTypeQ8_0 or GGMLTypeF32.
	// Norms, biases and tensors whose rows are not whole blocks stay F32.
	Type uint32
}

// archFamilies are the architectures Arch writes.
var archFamilies = []string{"llama", "qwen3", "qwen3moe", "gemma3", "phi3", "lfm2", "nomic-bert", "bert"}

// Arch returns a sparse model of o.Arch with its real tensor layout. Invalid options make every
// write fail with the reason.
func Arch(o ArchOptions) *File {
	f := &File{Alignment: defaultAlignment, Sparse: true}
	if !slices.Contains(archFamilies, o.Arch) {
		f.err = fmt.Errorf("arch options: unknown architecture %q (known: %v)", o.Arch, archFamilies)
		return f
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Embedding, 256)
	def(&o.Blocks, 2)
	def(&o.FFN, 4*o.Embedding)
	def(&o.Heads, 4)
	def(&o.HeadsKV, o.Heads)
	def(&o.HeadDim, o.Embedding/o.Heads)
	def(&o.Vocab, 32000)
	def(&o.Experts, 8)
	def(&o.ExpertsUsed, 2)
	def(&o.SlidingWindow, 512)
	def(&o.ContextLength, 32768)
	if o.Name == "" {
		o.Name = "ggufwrite " + o.Arch
	}
	if o.Type == 0 && o.Arch != "" {
		o.Type = GGMLTypeF16
	}
	if o.Embedding%o.Heads != 0 || o.Heads%o.HeadsKV != 0 || o.HeadDim%2 != 0 {
		f.err = fmt.Errorf("arch options: width %d, heads %d, heads_kv %d, head width %d do not fit together", o.Embedding, o.Heads, o.HeadsKV, o.HeadDim)
		return f
	}
	voc, err := makeVocab(o.Vocab)
	if err != nil {
		f.err = fmt.Errorf("arch options: %w", err)
		return f
	}
	if o.Arch == "phi3" {
		// llama.cpp looks up phi3's chat tokens by text when it loads the vocabulary.
		for i, tok := range []string{"<|endoftext|>", "<|end|>", "<|user|>", "<|assistant|>", "<|system|>"} {
			j := len(voc.tokens) - 1 - i
			if j < 3+256 {
				f.err = fmt.Errorf("arch options: vocabulary of %d tokens has no room for phi3's chat tokens", o.Vocab)
				return f
			}
			voc.tokens[j], voc.types[j] = tok, tokenControl
		}
	}
	fileType := uint32(1) // MOSTLY_F16
	switch o.Type {
	case GGMLTypeF32:
		fileType = 0
	case GGMLTypeQ8_0:
		fileType = 7
	}
	a := o.Arch
	f.KVs = []KV{
		{"general.architecture", a},
		{"general.type", "model"},
		{"general.name", o.Name},
		{"general.file_type", fileType},
		{"general.quantization_version", uint32(2)},
		{alignmentKey, uint32(defaultAlignment)},
		{a + ".context_length", uint32(o.ContextLength)},
		{a + ".embedding_length", uint32(o.Embedding)},
		{a + ".block_count", uint32(o.Blocks)},
		{a + ".feed_forward_length", uint32(o.FFN)},
		{a + ".attention.head_count", uint32(o.Heads)},
		{a + ".rope.freq_base", float32(10000)},
		{a + ".vocab_size", uint32(o.Vocab)},
	}
	if a == "lfm2" {
		// Conv layers have no KV heads: every third layer (2, 5, …) is attention, as in LFM2.
		kv := make([]uint32, o.Blocks)
		for i := range kv {
			if i%3 == 2 {
				kv[i] = uint32(o.HeadsKV)
			}
		}
		f.KVs = append(f.KVs, KV{a + ".attention.head_count_kv", kv}, KV{a + ".shortconv.l_cache", uint32(3)})
	} else {
		f.KVs = append(f.KVs, KV{a + ".attention.head_count_kv", uint32(o.HeadsKV)})
	}
	encoder := a == "nomic-bert" || a == "bert"
	if encoder {
		f.KVs = append(f.KVs,
			KV{a + ".attention.layer_norm_epsilon", float32(1e-12)},
			KV{a + ".attention.causal", false},
		)
		pool := uint32(1) // mean
		if a == "bert" {
			pool = 4 // rank: a reranker
		}
		f.KVs = append(f.KVs, KV{a + ".pooling_type", pool})
	} else {
		f.KVs = append(f.KVs,
			KV{a + ".attention.layer_norm_rms_epsilon", float32(1e-6)},
			KV{a + ".attention.key_length", uint32(o.HeadDim)},
			KV{a + ".attention.value_length", uint32(o.HeadDim)},
			KV{a + ".rope.dimension_count", uint32(o.HeadDim)},
		)
	}
	switch a {
	case "gemma3":
		f.KVs = append(f.KVs, KV{a + ".attention.sliding_window", uint32(o.SlidingWindow)})
	case "qwen3moe":
		f.KVs = append(f.KVs,
			KV{a + ".expert_count", uint32(o.Experts)},
			KV{a + ".expert_used_count", uint32(o.ExpertsUsed)},
			KV{a + ".expert_feed_forward_length", uint32(o.FFN)},
		)
	}
	f.KVs = append(f.KVs, voc.kvs(DefaultChatTemplate)...)
	if encoder {
		f.KVs = setKV(f.KVs, KV{"tokenizer.ggml.add_eos_token", true})
		f.KVs = append(f.KVs, KV{"tokenizer.ggml.seperator_token_id", eosID}, KV{"tokenizer.ggml.padding_token_id", unkID}, KV{"tokenizer.ggml.token_type_count", uint32(2)})
	}
	for _, t := range archTensors(o) {
		typ := o.Type
		if len(t.shape) == 1 || t.norm || t.shape[0]%32 != 0 {
			typ = GGMLTypeF32
		}
		f.Tensors = append(f.Tensors, Tensor{Name: t.name, Shape: t.shape, Type: typ})
	}
	return f
}

// archTensors lists the tensors llama.cpp loads for o.Arch, shapes in GGUF order (ne0 first).
func archTensors(o ArchOptions) []tensor {
	e, ff, v := uint64(o.Embedding), uint64(o.FFN), uint64(o.Vocab)
	dq := uint64(o.Heads * o.HeadDim)
	dkv := uint64(o.HeadsKV * o.HeadDim)
	hd := uint64(o.HeadDim)
	var ts []tensor
	add := func(name string, shape ...uint64) { ts = append(ts, tensor{name: name, shape: shape}) }
	norm := func(name string, n uint64) { ts = append(ts, tensor{name: name, shape: []uint64{n}, norm: true}) }
	add("token_embd.weight", e, v)
	switch o.Arch {
	case "nomic-bert", "bert":
		// llama.cpp adds a view of row 0 to the embeddings: it must be F32.
		ts = append(ts, tensor{name: "token_types.weight", shape: []uint64{e, 2}, norm: true})
		if o.Arch == "bert" {
			add("position_embd.weight", e, uint64(o.ContextLength))
		}
		norm("token_embd_norm.weight", e)
		norm("token_embd_norm.bias", e)
	case "lfm2":
		norm("token_embd_norm.weight", e)
	default:
		norm("output_norm.weight", e)
	}
	if !o.Tied && (o.Arch == "llama" || o.Arch == "qwen3" || o.Arch == "qwen3moe" || o.Arch == "phi3") {
		add("output.weight", e, v)
	}
	if o.Arch == "bert" {
		add("cls.weight", e, e)
		norm("cls.bias", e)
		add("cls.output.weight", e, 1)
		norm("cls.output.bias", 1)
	}
	for b := range o.Blocks {
		p := fmt.Sprintf("blk.%d.", b)
		switch o.Arch {
		case "nomic-bert":
			add(p+"attn_qkv.weight", e, dq+2*dkv)
			add(p+"attn_output.weight", dq, e)
			norm(p+"attn_output_norm.weight", e)
			norm(p+"attn_output_norm.bias", e)
			add(p+"ffn_up.weight", e, ff)
			add(p+"ffn_gate.weight", e, ff)
			add(p+"ffn_down.weight", ff, e)
			norm(p+"layer_output_norm.weight", e)
			norm(p+"layer_output_norm.bias", e)
			continue
		case "bert":
			for _, w := range []struct {
				n       string
				in, out uint64
			}{{"attn_q", e, dq}, {"attn_k", e, dkv}, {"attn_v", e, dkv}, {"attn_output", dq, e}} {
				add(p+w.n+".weight", w.in, w.out)
				norm(p+w.n+".bias", w.out)
			}
			norm(p+"attn_output_norm.weight", e)
			norm(p+"attn_output_norm.bias", e)
			add(p+"ffn_up.weight", e, ff)
			norm(p+"ffn_up.bias", ff)
			add(p+"ffn_down.weight", ff, e)
			norm(p+"ffn_down.bias", e)
			norm(p+"layer_output_norm.weight", e)
			norm(p+"layer_output_norm.bias", e)
			continue
		case "phi3":
			norm(p+"attn_norm.weight", e)
			add(p+"attn_qkv.weight", e, dq+2*dkv)
			add(p+"attn_output.weight", dq, e)
			norm(p+"ffn_norm.weight", e)
			add(p+"ffn_up.weight", e, 2*ff)
			add(p+"ffn_down.weight", ff, e)
			continue
		}
		norm(p+"attn_norm.weight", e)
		if o.Arch == "lfm2" && b%3 != 2 {
			add(p+"shortconv.conv.weight", 3, e)
			add(p+"shortconv.in_proj.weight", e, 3*e)
			add(p+"shortconv.out_proj.weight", e, e)
		} else {
			add(p+"attn_q.weight", e, dq)
			add(p+"attn_k.weight", e, dkv)
			add(p+"attn_v.weight", e, dkv)
			add(p+"attn_output.weight", dq, e)
			if o.Arch != "llama" {
				norm(p+"attn_q_norm.weight", hd)
				norm(p+"attn_k_norm.weight", hd)
			}
		}
		if o.Arch == "gemma3" {
			norm(p+"post_attention_norm.weight", e)
		}
		norm(p+"ffn_norm.weight", e)
		if o.Arch == "qwen3moe" {
			x := uint64(o.Experts)
			ts = append(ts, tensor{name: p + "ffn_gate_inp.weight", shape: []uint64{e, x}, norm: true})
			add(p+"ffn_gate_exps.weight", e, ff, x)
			add(p+"ffn_up_exps.weight", e, ff, x)
			add(p+"ffn_down_exps.weight", ff, e, x)
			continue
		}
		add(p+"ffn_gate.weight", e, ff)
		add(p+"ffn_up.weight", e, ff)
		add(p+"ffn_down.weight", ff, e)
		if o.Arch == "gemma3" {
			norm(p+"post_ffw_norm.weight", e)
		}
	}
	return ts
}

// WriteArch writes Arch(o) to path.
func WriteArch(path string, o ArchOptions) error { return WriteFile(path, Arch(o)) }
