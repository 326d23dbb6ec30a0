package service

import (
	"fmt"
	"strconv"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/config"
)

// Draft models for speculative decoding: a model's `draft` (a catalog ID, alias or ORG/REPO:QUANT)
// is passed to its child as --model-draft with the draft's file, with --spec-type draft-simple
// (llama-server 0.7.0 loads a draft without it but never drafts with it), -ngld from
// draft_gpu_layers and --spec-draft-n-max from draft_max (0.7.0 refuses --draft-max, "the argument
// has been removed"). The draft is looked up when the settings are made, so a draft configured or
// pulled since the last scan counts; one that is missing, or whose vocabulary does not match
// (catalog.DraftVocab), refuses the model's loads with the reason (engine.Settings.Refuse), never
// reaching llama-server. A draft named by the Hub and not pulled is not downloaded for it, even with
// auto_pull: the reason says how to pull it. The draft's memory is in the catalog's estimate; its
// file is on the child's command line, so a learned footprint is kept apart for each draft.

// draftArgs are the llama-server flags that give model id (settings ms) its draft, or why it
// cannot have it. None when no draft is configured.
func draftArgs(cat *catalog.Catalog, id string, ms config.Model) ([]string, error) {
	if ms.Draft == "" {
		return nil, nil
	}
	m, ok := cat.Lookup(id)
	if !ok {
		return nil, fmt.Errorf("model %q is not in the catalog", id)
	}
	d, ok := cat.Lookup(ms.Draft)
	if !ok {
		return nil, &catalog.DraftMissingError{Model: id, Draft: ms.Draft}
	}
	if err := catalog.DraftVocab(m.ID, m.Vocab, d.ID, d.Vocab); err != nil {
		return nil, err
	}
	args := []string{"--model-draft", d.Path, "--spec-type", "draft-simple"}
	if ms.DraftGPULayers != nil {
		n := strconv.Itoa(*ms.DraftGPULayers)
		if *ms.DraftGPULayers < 0 {
			n = "all"
		}
		args = append(args, "-ngld", n)
	}
	if ms.DraftMax > 0 {
		args = append(args, "--spec-draft-n-max", strconv.Itoa(ms.DraftMax))
	}
	return args, nil
}
