package catalog

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"strings"

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

// Draft models. A model's configured draft (EstimateParams.Draft: a catalog ID, alias or
// ORG/REPO:QUANT) is resolved once a scan has found every model, so a draft found in the same scan
// counts: the entry gets the draft's ID and file, and its estimate the draft's memory (its weights
// and its KV cache, for the context and slots the model runs with, as llama-server gives a draft
// the model's context). A draft that is missing or whose vocabulary does not match (vocab.go)
// leaves DraftError set instead, naming both models; the model's loads fail with it.

// withDrafts resolves the configured draft of every model in models (variants included) and adds
// its memory to the model's estimate. Called by Scan before the snapshot is built.
func (c *Catalog) withDrafts(models []Model) {
	idx := buildSnapshot(models, func(string) bool { return false }, nil, 0)
	prev := c.snap.Load()
	for i := range models {
		m := &models[i]
		p := c.opts.Params(m.ID)
		if p.Draft == "" {
			continue
		}
		var err error
		d, found := idx.lookup(p.Draft)
		if !found {
			err = &DraftMissingError{Model: m.ID, Draft: p.Draft}
		} else {
			err = DraftVocab(m.ID, m.Vocab, d.ID, d.Vocab)
		}
		if err == nil {
			err = c.addDraft(m, d, p)
		}
		if err != nil {
			m.DraftError = err.Error()
			if j, ok := prev.exact[m.ID]; !ok || prev.all[j].DraftError != m.DraftError { // once, not every scan
				c.log.Warn("draft model refused", "model", m.ID, "draft", p.Draft, "reason", m.DraftError)
			}
			continue
		}
		m.Draft, m.DraftPath = d.ID, d.Path
	}
}

// DraftMissingError says a model's configured draft is not in the catalog.
type DraftMissingError struct {
	Model, Draft string
}

func (e *DraftMissingError) Error() string {
	if strings.Count(e.Draft, "/") == 1 && strings.Contains(e.Draft, ":") {
		return fmt.Sprintf("%s's draft model %s is not on this machine: download it with `llamatray pull %s` (or POST /models {\"model\": %q}), then load %s again", e.Model, e.Draft, e.Draft, e.Draft, e.Model)
	}
	return fmt.Sprintf("%s's draft model %q is not in the catalog (its draft must be another model's ID, alias or ORG/REPO:QUANT)", e.Model, e.Draft)
}

// find is the index in s.all of the model Lookup finds by name.
func (s *snapshot) find(name string) (int, bool) {
	if i, ok := s.exact[name]; ok {
		return i, true
	}
	i, ok := s.fold[strings.ToLower(name)]
	return i, ok && i >= 0
}

// lookup finds a name as Lookup does, in s.
func (s *snapshot) lookup(name string) (Model, bool) {
	if i, ok := s.find(name); ok {
		return s.all[i], true
	}
	return Model{}, false
}

// addDraft adds draft d's memory to m's estimate, d run as llama-server runs a draft for m: m's
// context and slots, the draft's own offload, an f16 KV cache (-ctkd is not passed).
func (c *Catalog) addDraft(m *Model, d Model, p EstimateParams) error {
	c.mu.Lock()
	r := c.cache[d.Path]
	c.mu.Unlock()
	if r == nil || r.h == nil {
		return fmt.Errorf("%s's draft model %s: its header was not read", m.ID, d.ID)
	}
	ctx := m.Estimate.ContextSize
	if ctx <= 0 {
		ctx = p.ContextSize
	}
	de, err := estimate(r.h, nil, EstimateParams{ContextSize: ctx, Parallel: p.Parallel, GPULayers: p.DraftGPULayers, FlashAttn: p.FlashAttn})
	if err != nil {
		return fmt.Errorf("%s's draft model %s: no memory estimate: %w", m.ID, d.ID, err)
	}
	m.Estimate.RAM += de.RAM
	m.Estimate.VRAM += de.VRAM
	m.Estimate.Draft = de.RAM + de.VRAM
	return nil
}

// DraftCandidates are the models that can draft for id, by their vocabulary, with for every other
// model the reason it cannot (a *VocabMismatch's text), by ID: what a settings editor offers.
// Hidden models are left out of both.
func (c *Catalog) DraftCandidates(id string) (ok []string, refused map[string]string, err error) {
	t, found := c.Lookup(id)
	if !found {
		return nil, nil, fmt.Errorf("model %q is not in the catalog", id)
	}
	refused = map[string]string{}
	for _, d := range c.Models() {
		if d.VariantOf != "" {
			continue // a variant names its model's file: offer the model
		}
		if err := DraftVocab(t.ID, t.Vocab, d.ID, d.Vocab); err != nil {
			refused[d.ID] = err.Error()
			continue
		}
		ok = append(ok, d.ID)
	}
	return ok, refused, nil
}
