package ggufwrite

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
)

// Token types of tokenizer.ggml.token_type (llama_token_attr in llama.cpp).
const (
	tokenNormal  int32 = 1
	tokenUnknown int32 = 2
	tokenControl int32 = 3
	tokenByte    int32 = 6
)

// Special token ids of the generated SentencePiece vocabulary.
const (
	unkID uint32 = 0
	bosID uint32 = 1
	eosID uint32 = 2
)

// DefaultChatTemplate is the chatml Jinja template used when none is given.
const DefaultChatTemplate = "{% for message in messages %}" +
	"{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}" +
	"{% endfor %}" +
	"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

// spmSpace is SentencePiece's word-boundary marker (U+2581).
const spmSpace = "\u2581"

// vocab is a SentencePiece ("llama") tokenizer vocabulary.
type vocab struct {
	tokens []string
	scores []float32
	types  []int32
}

// baseVocab builds <unk> <s> </s>, the 256 byte tokens <0x00>..<0xFF>, then
// normal tokens: the space marker, "▁a".."▁z", "a".."z", digits and some
// punctuation, with decreasing scores.
func baseVocab() *vocab {
	v := &vocab{}
	add := func(tok string, score float32, typ int32) {
		v.tokens = append(v.tokens, tok)
		v.scores = append(v.scores, score)
		v.types = append(v.types, typ)
	}
	add("<unk>", 0, tokenUnknown)
	add("<s>", 0, tokenControl)
	add("</s>", 0, tokenControl)
	for b := range 256 {
		add(fmt.Sprintf("<0x%02X>", b), 0, tokenByte)
	}
	normal := []string{spmSpace}
	for c := 'a'; c <= 'z'; c++ {
		normal = append(normal, spmSpace+string(c))
	}
	for c := 'a'; c <= 'z'; c++ {
		normal = append(normal, string(c))
	}
	for c := '0'; c <= '9'; c++ {
		normal = append(normal, string(c))
	}
	normal = append(normal, ".", ",", "!", "?", "'", "-", ":")
	for i, tok := range normal {
		add(tok, -float32(i+1), tokenNormal)
	}
	return v
}

// makeVocab returns a vocabulary of exactly n tokens (0 means the base
// vocabulary), padding the base with "▁w<i>" word tokens.
func makeVocab(n int) (*vocab, error) {
	v := baseVocab()
	if n == 0 {
		return v, nil
	}
	if n < len(v.tokens) {
		return nil, fmt.Errorf("vocabulary of %d tokens is smaller than the %d base tokens", n, len(v.tokens))
	}
	for i := len(v.tokens); i < n; i++ {
		v.tokens = append(v.tokens, fmt.Sprintf("%sw%d", spmSpace, i))
		v.scores = append(v.scores, -float32(i))
		v.types = append(v.types, tokenNormal)
	}
	return v, nil
}

// kvs returns the tokenizer metadata.
func (v *vocab) kvs(chatTemplate string) []KV {
	return []KV{
		{"tokenizer.ggml.model", "llama"},
		{"tokenizer.ggml.tokens", v.tokens},
		{"tokenizer.ggml.scores", v.scores},
		{"tokenizer.ggml.token_type", v.types},
		{"tokenizer.ggml.bos_token_id", bosID},
		{"tokenizer.ggml.eos_token_id", eosID},
		{"tokenizer.ggml.unknown_token_id", unkID},
		{"tokenizer.ggml.add_bos_token", true},
		{"tokenizer.ggml.add_eos_token", false},
		{"tokenizer.chat_template", chatTemplate},
	}
}

// randomFill returns a Fill that streams count little-endian float32 values
// drawn uniformly from [-scale, scale] by a PCG generator seeded with
// (seed, stream), so the output depends only on those two numbers.
// Each call starts over, so a File can be written more than once.
func randomFill(total uint64, scale float32, seed int64, stream uint64) func(w io.Writer) error {
	return func(w io.Writer) error {
		count := total
		r := rand.New(rand.NewPCG(uint64(seed), stream))
		buf := make([]byte, 64<<10)
		k := scale / float32(math.MaxInt32)
		for count > 0 {
			n := min(count, uint64(len(buf)/4))
			b := buf[:n*4]
			for i := uint64(0); i < n; i++ {
				bits := math.Float32bits(float32(int32(r.Uint32())) * k)
				b[4*i] = byte(bits)
				b[4*i+1] = byte(bits >> 8)
				b[4*i+2] = byte(bits >> 16)
				b[4*i+3] = byte(bits >> 24)
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
			count -= n
		}
		return nil
	}
}
