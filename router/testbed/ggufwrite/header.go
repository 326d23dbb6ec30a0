package ggufwrite

import (
	"errors"
	"fmt"
)

// HeaderOptions describes a metadata-complete llama-like model whose tensors
// are declared but never written. Zero fields take their defaults, which
// describe a 7B llama.
type HeaderOptions struct {
	Arch          string // general.architecture, default "llama"
	Name          string // general.name, default "ggufwrite header <Embedding>x<Blocks>"
	Blocks        int    // default 32
	Embedding     int    // default 4096
	FFN           int    // default 11008
	Heads         int    // default 32
	HeadsKV       int    // default Heads
	Vocab         int    // default 32000; at least the base vocabulary (about 330 tokens)
	ContextLength int    // default 4096
	// FileType is general.file_type, e.g. 15 for Q4_K_M. The tensors are
	// declared F32 when it is 0 and F16 otherwise (norms always F32).
	FileType     uint32
	ChatTemplate string // default DefaultChatTemplate
	// SplitNo and SplitCount make this file split SplitNo (0-based) of
	// SplitCount when SplitCount > 1: it holds its share of the tensors and the
	// split.no, split.count and split.tensors.count keys. As gguf-split does,
	// only split 0 carries the model metadata.
	SplitNo, SplitCount int
	ExtraKVs            []KV // added to the metadata; a key already present is replaced
}

// Header returns a metadata-complete llama-like model with its tensors
// declared and Sparse set, so that writing it gives a file of the model's
// real size that takes almost no disk. Invalid options make every write fail
// with the reason.
func Header(o HeaderOptions) *File {
	if o.Arch == "" {
		o.Arch = "llama"
	}
	if o.Blocks == 0 {
		o.Blocks = 32
	}
	if o.Embedding == 0 {
		o.Embedding = 4096
	}
	if o.FFN == 0 {
		o.FFN = 11008
	}
	if o.Heads == 0 {
		o.Heads = 32
	}
	if o.HeadsKV == 0 {
		o.HeadsKV = o.Heads
	}
	if o.Vocab == 0 {
		o.Vocab = 32000
	}
	if o.ContextLength == 0 {
		o.ContextLength = 4096
	}
	if o.Name == "" {
		o.Name = fmt.Sprintf("ggufwrite header %dx%d", o.Embedding, o.Blocks)
	}
	if o.ChatTemplate == "" {
		o.ChatTemplate = DefaultChatTemplate
	}
	f := &File{Alignment: defaultAlignment, Sparse: true}
	s := shape{embd: o.Embedding, blocks: o.Blocks, ff: o.FFN, heads: o.Heads, headsKV: o.HeadsKV, vocab: o.Vocab}
	if err := s.validate(); err != nil {
		f.err = fmt.Errorf("header options: %w", err)
		return f
	}
	if o.ContextLength < 0 {
		f.err = errors.New("header options: negative context length")
		return f
	}
	split := o.SplitCount > 1
	if split && (o.SplitNo < 0 || o.SplitNo >= o.SplitCount || o.SplitCount > 0xFFFF) {
		f.err = fmt.Errorf("header options: split %d of %d is out of range", o.SplitNo, o.SplitCount)
		return f
	}
	if !split && o.SplitNo != 0 {
		f.err = fmt.Errorf("header options: SplitNo %d needs SplitCount > 1", o.SplitNo)
		return f
	}
	voc, err := makeVocab(o.Vocab)
	if err != nil {
		f.err = fmt.Errorf("header options: %w", err)
		return f
	}

	all := s.tensors()
	if !split || o.SplitNo == 0 {
		f.KVs = append(f.KVs,
			KV{"general.architecture", o.Arch},
			KV{"general.type", "model"},
			KV{"general.name", o.Name},
			KV{"general.file_type", o.FileType},
			KV{"general.quantization_version", uint32(2)},
			KV{alignmentKey, uint32(defaultAlignment)},
		)
		f.KVs = append(f.KVs, s.archKVs(o.Arch, o.ContextLength)...)
		f.KVs = append(f.KVs, voc.kvs(o.ChatTemplate)...)
	}
	part := all
	if split {
		f.KVs = append(f.KVs,
			KV{"split.no", uint16(o.SplitNo)},
			KV{"split.count", uint16(o.SplitCount)},
			KV{"split.tensors.count", int32(len(all))},
		)
		lo := len(all) * o.SplitNo / o.SplitCount
		hi := len(all) * (o.SplitNo + 1) / o.SplitCount
		part = all[lo:hi]
	}
	for _, kv := range o.ExtraKVs {
		f.KVs = setKV(f.KVs, kv)
	}
	weightType := GGMLTypeF16
	if o.FileType == 0 {
		weightType = GGMLTypeF32
	}
	for _, t := range part {
		typ := weightType
		if t.norm {
			typ = GGMLTypeF32
		}
		f.Tensors = append(f.Tensors, Tensor{Name: t.name, Shape: t.shape, Type: typ})
	}
	return f
}

// setKV replaces the value of kv.Key in kvs, or appends kv.
func setKV(kvs []KV, kv KV) []KV {
	for i := range kvs {
		if kvs[i].Key == kv.Key {
			kvs[i] = kv
			return kvs
		}
	}
	return append(kvs, kv)
}
