package catalog

import (
	"fmt"
	"strings"
)

// Draft models. A model's configured draft (EstimateParams.Draft: a catalog ID, alias or
// ORG/REPO:QUANT) is resolved once a scan has found every model, so a draft found in the same scan
// counts: the entry gets the draft's ID and file, and its estimate the draft's memory (its weights
// and its KV cache, for the context and slots the model runs with, as llama-server gives a draft
// the model's context). A draft that is missing or whose vocabulary does not match (vocab.go)
// leaves DraftError set instead, naming both models; the model's loads fail with it.

// withDrafts resolves the configured draft of every model in models (variants included) and adds
// its memory to the model's estimate. Called by Scan before the snapshot is built.
func (c *Catalog) withDrafts(models []Model) {
	idx := buildSnapshot(models, make([]bool, len(models)), nil, 0)
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

// lookup finds a name as Lookup does, in s.
func (s *snapshot) lookup(name string) (Model, bool) {
	if i, ok := s.exact[name]; ok {
		return s.all[i], true
	}
	if i, ok := s.fold[strings.ToLower(name)]; ok && i >= 0 {
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
