package catalog

import "fmt"

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
// vocabulary does not match. A draft's memory is part of the estimate (draft.go).
func (c *Catalog) EstimateWith(id string, p EstimateParams) (Estimate, error) {
	m, ok := c.Lookup(id)
	if !ok {
		return Estimate{}, fmt.Errorf("model %q is not in the catalog", id)
	}
	c.mu.Lock()
	r := c.cache[m.Path]
	var proj *cached
	if m.Mmproj != "" {
		proj = c.cache[m.Mmproj]
	}
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
