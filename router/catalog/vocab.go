package catalog

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"

	gguf "github.com/gpustack/gguf-parser-go"
)

// Vocabularies, for speculative decoding: a draft model proposes tokens by id and the model it
// drafts for checks them, so the two must mean the same text by each id. llama.cpp's own rule
// (common/speculative.cpp) is the one kept here: the same tokenizer type, the same BOS and EOS
// ids and whether each is added, sizes at most 128 apart, and the same text for every id from 5
// up to the smaller size. It is decided from the GGUF headers alone: while a header is read the
// tokens are digested as they go by (no array is kept), and the digest of ids [5, k) is kept for
// each k of the last 129 sizes, so two vocabularies of different sizes compare on their common
// part without reading a file again.

const (
	vocabMaxSizeDiff = 128 // llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE
	vocabCheckStart  = 5   // llama.cpp's SPEC_VOCAB_CHECK_START_TOKEN_ID
)

// Vocab is what a model's header says of its vocabulary. The zero Vocab is a header without one.
type Vocab struct {
	Model  string // tokenizer.ggml.model: "llama", "gpt2"
	Size   int    // tokens
	BOS    int64  // tokenizer.ggml.bos_token_id; -1 = none
	EOS    int64  // tokenizer.ggml.eos_token_id; -1 = none
	AddBOS string // tokenizer.ggml.add_bos_token: "true", "false", "" = unset
	AddEOS string // tokenizer.ggml.add_eos_token
	// sums[i] is the digest of the texts of ids [vocabCheckStart, lo+i), lo = sumsFrom(Size).
	sums []uint64
}

// sumsFrom is the first prefix length whose digest a vocabulary of size n keeps.
func sumsFrom(n int) int { return max(vocabCheckStart, n-vocabMaxSizeDiff) }

// prefix is the digest of ids [vocabCheckStart, k), if kept.
func (v Vocab) prefix(k int) (uint64, bool) {
	i := k - sumsFrom(v.Size)
	if i < 0 || i >= len(v.sums) {
		return 0, false
	}
	return v.sums[i], true
}

// VocabMismatch says why draft cannot draft for target.
type VocabMismatch struct {
	Target, Draft string // model IDs
	Reason        string
}

func (e *VocabMismatch) Error() string {
	return fmt.Sprintf("%s cannot draft for %s: %s", e.Draft, e.Target, e.Reason)
}

// DraftVocab checks that a model with vocabulary d can draft for one with vocabulary t, by
// llama.cpp's rule; the error is a *VocabMismatch naming both (by tID and dID).
func DraftVocab(tID string, t Vocab, dID string, d Vocab) error {
	bad := func(f string, a ...any) error {
		return &VocabMismatch{Target: tID, Draft: dID, Reason: fmt.Sprintf(f, a...)}
	}
	switch {
	case t.Size == 0 || t.Model == "":
		return bad("%s's header has no vocabulary", tID)
	case d.Size == 0 || d.Model == "":
		return bad("%s's header has no vocabulary", dID)
	case t.Model != d.Model:
		return bad("their tokenizers differ (%s: %s, %s: %s)", tID, t.Model, dID, d.Model)
	case t.BOS != d.BOS || t.AddBOS != d.AddBOS:
		return bad("their beginning-of-text tokens differ (%s: %s, %s: %s)", tID, special(t.BOS, t.AddBOS), dID, special(d.BOS, d.AddBOS))
	case t.EOS != d.EOS || t.AddEOS != d.AddEOS:
		return bad("their end-of-text tokens differ (%s: %s, %s: %s)", tID, special(t.EOS, t.AddEOS), dID, special(d.EOS, d.AddEOS))
	case max(t.Size, d.Size)-min(t.Size, d.Size) > vocabMaxSizeDiff:
		return bad("%s has %d tokens and %s %d; a draft's vocabulary may differ in size by at most %d", tID, t.Size, dID, d.Size, vocabMaxSizeDiff)
	}
	n := min(t.Size, d.Size)
	a, ok1 := t.prefix(n)
	b, ok2 := d.prefix(n)
	if !ok1 || !ok2 {
		return bad("their tokens could not be read")
	}
	if a != b {
		return bad("their tokens differ (ids %d to %d compared)", vocabCheckStart, n-1)
	}
	return nil
}

func special(id int64, add string) string {
	s := "none"
	if id >= 0 {
		s = fmt.Sprintf("id %d", id)
	}
	if add != "" {
		s += ", added " + add
	}
	return s
}

// tokenDigest digests the texts of tokenizer.ggml.tokens as a header is read.
type tokenDigest struct {
	h    hash.Hash
	n    int // tokens digested
	size int // tokens in the array
	sums []uint64
}

func newTokenDigest(size int) *tokenDigest {
	return &tokenDigest{h: sha256.New(), size: size, sums: make([]uint64, 0, min(size, vocabMaxSizeDiff)+1)}
}

// keep records the digest of ids [vocabCheckStart, n) when n is one of the kept sizes.
func (d *tokenDigest) keep() {
	if d.n >= sumsFrom(d.size) && d.n <= d.size { // an array shorter than vocabCheckStart keeps none
		var b [sha256.Size]byte
		d.sums = append(d.sums, binary.LittleEndian.Uint64(d.h.Sum(b[:0])))
	}
}

// add digests the next token's text (its length first, so that texts cannot run together).
func (d *tokenDigest) add(text []byte) {
	if d.n >= vocabCheckStart {
		var l [8]byte
		binary.LittleEndian.PutUint64(l[:], uint64(len(text)))
		d.h.Write(l[:])
		d.h.Write(text)
	}
	d.n++
	d.keep()
}

// vocabOf is the vocabulary described by gf's metadata, with the token digest of its first file.
func vocabOf(gf *gguf.GGUFFile, d *tokenDigest) Vocab {
	kvs := gf.Header.MetadataKV
	v := Vocab{BOS: -1, EOS: -1}
	if kv, ok := kvs.Get("tokenizer.ggml.model"); ok && kv.ValueType == gguf.GGUFMetadataValueTypeString {
		v.Model = kv.ValueString()
	}
	id := func(key string) int64 {
		if kv, ok := kvs.Get(key); ok && kv.ValueType.IsNumeric() {
			return gguf.ValueNumeric[int64](kv)
		}
		return -1
	}
	flag := func(key string) string {
		if kv, ok := kvs.Get(key); ok && kv.ValueType == gguf.GGUFMetadataValueTypeBool {
			return fmt.Sprint(kv.ValueBool())
		}
		return ""
	}
	v.BOS, v.EOS = id("tokenizer.ggml.bos_token_id"), id("tokenizer.ggml.eos_token_id")
	v.AddBOS, v.AddEOS = flag("tokenizer.ggml.add_bos_token"), flag("tokenizer.ggml.add_eos_token")
	if d != nil && d.n == d.size {
		v.Size = d.size
		v.sums = d.sums
	}
	return v
}
