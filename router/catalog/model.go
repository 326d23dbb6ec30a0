package catalog

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"
)

// Estimate is the memory a model needs when llama-server loads it with given parameters.
type Estimate struct {
	RAM         int64 // host memory, including weights not offloaded
	VRAM        int64 // GPU memory over all devices
	ContextSize int   // the context size estimated for
	GPULayers   int   // layers offloaded (the output layer counts as one)
	Draft       int64 // of RAM and VRAM, what the draft model takes (weights, KV cache, buffers); 0 = none
}

// EstimateParams are the load parameters an estimate is made for.
type EstimateParams struct {
	ContextSize int    // always set explicitly; 0 or less = the model's trained context length
	Parallel    int    // 0 = llama-server's default
	GPULayers   int    // -1 = all, 0 = CPU only
	FlashAttn   string // -fa: "on", "off", or "" for llama-server's "auto" (on: every backend it ships runs it)
	CacheType   string // KV cache type for keys and values ("q8_0"); "" = f16
	// Draft is the draft model for speculative decoding as configured (a catalog ID, alias or
	// ORG/REPO:QUANT); "" = none. A scan resolves it (vocab.go) and adds its memory to the estimate.
	Draft          string
	DraftGPULayers int // the draft's offload: -1 = all, 0 = CPU only
}

// Model is one catalog entry.
type Model struct {
	ID            string
	Path          string   // the file to load: the first shard of a split model
	Files         []string // every file, shards in order
	Mmproj        string   // multimodal projector from the same folder, if any
	Aliases       []string // configured aliases
	Architecture  string
	Name          string // general.name
	Parameters    int64
	Quantization  string // from general.file_type, e.g. "Q4_K_M", "F32"
	SizeBytes     int64  // all files together
	ContextLength int    // trained context length
	EmbeddingLen  int    // width of its embeddings (<arch>.embedding_length), 0 = unknown
	Pooling       bool   // it pools its output into one embedding (<arch>.pooling_type): an embedding model
	Rerank        bool   // its pooling is llama.cpp's rank (pooling_type 4): a reranker, served with --reranking
	ChatTemplate  bool   // the file carries a chat template
	Vocab         Vocab  // its vocabulary, from the header (vocab.go)
	// The draft model configured for it (EstimateParams.Draft), as the scan resolved it
	// (vocab.go): its ID and file, or why it cannot be used (missing, another vocabulary).
	Draft      string
	DraftPath  string
	DraftError string
	// EstimateError is why the memory estimate could not be made from the header (Estimate is then
	// zero and the engine counts the file size); "" when it was made.
	EstimateError string
	Splits        int // number of files
	Estimate      Estimate
	ModTime       time.Time // newest of the files
	Root          string    // the scanned folder it was found in
	HubRepo       string    // ORG/REPO when found in a Hugging Face cache
	HubName       string    // ORG/REPO:QUANT, llama.cpp's -hf spelling; it resolves like an alias
	// FileID is, for a model found in a Hugging Face cache and named by its HubName (its ID is
	// then ORG/REPO:QUANT), the file-name ID it had before, and for a variant of such a model its
	// ID before (FILE-ID@NAME): it stays one of its Aliases. "" otherwise.
	FileID    string
	VariantOf string // for a variant (ID "BASE@NAME"): the ID of the model whose file it serves
	Variant   string // for a variant: its name
	// Ollama lists the names the file has in an Ollama store (ollama.go), sorted part by part:
	// one per manifest whose model layer it is, with that manifest's settings. A blob found there
	// gets its first name as ID ("llama3.2:3b"; store-qualified when two stores have it, as
	// clashing stems are). Each name, and a "NAME:latest" without its ":latest", resolves like an
	// alias (after IDs, aliases and Hugging Face names); OllamaNamed finds the one a request
	// used. A variant has none: they name the model's own entry.
	Ollama []OllamaName
	// Defaults are the request options the model's maker chose, for the API layers to apply to
	// requests that leave them out: the params layer of its first Ollama name (OllamaName.Defaults
	// tells how they read); nil when there are none.
	Defaults map[string]any
}

// Options configure a Catalog. The functions are called during scans, possibly from several
// goroutines at once; a scan reads them again, so call Scan after the settings behind them
// change.
type Options struct {
	Dirs    []string
	Params  func(id string) EstimateParams // nil → ctx 4096, CPU only
	Aliases func(id string) []string       // configured aliases
	Hidden  func(id string) bool           // left out of Models and Suggest; Lookup still finds it
	// Variants are the configured variant names by model ID: each name makes one more entry, ID@NAME,
	// for the same file, estimated with Params of its own ID (see variants). nil → none.
	Variants func() map[string][]string
	// Renamed, when set, is told at each scan, before the other functions are asked about the
	// models, which models are named by their Hub name: new ID (ORG/REPO:QUANT) → the file-name ID
	// they had (and keep as an alias). Settings kept under a file-name ID can be moved to the new
	// one from here (config.Config.Renamed).
	Renamed func(renamed map[string]string)
	Logger  *slog.Logger
}

// ParamsLabel writes a parameter count the way model cards do: "7B", "1.5B", "350M"; "" when unknown.
func ParamsLabel(n int64) string {
	switch {
	case n <= 0:
		return ""
	case n >= 10e9:
		return fmt.Sprintf("%.0fB", float64(n)/1e9)
	case n >= 1e9:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e9), ".0") + "B"
	case n >= 1e6:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0fK", float64(n)/1e3)
	}
	return fmt.Sprintf("%d", n)
}

// VariantSep joins a model's ID and a variant's name into the variant's ID (as config does).
const VariantSep = "@"

// variants builds the entries of base's variants (names): each a copy of base with its own ID,
// aliases and estimate, and no Hugging Face or Ollama name (those name the file's own entry).
// errs holds each one's estimate error.
func (c *Catalog) variants(base Model, names []string, r *cached, proj *entry, results map[*entry]*cached) (out []Model, errs []error) {
	if len(names) == 0 {
		return nil, nil
	}
	for _, name := range names {
		v := base.clone()
		v.ID = base.ID + VariantSep + name
		v.VariantOf, v.Variant = base.ID, name
		v.FileID, v.HubName, v.Ollama = "", "", nil
		if base.FileID != "" {
			v.FileID = base.FileID + VariantSep + name // its ID before its model took its Hub name
		}
		v.Aliases = cleanAliases(withFileID(c.opts.Aliases(v.ID), v.FileID), v.ID)
		var err error
		v.Estimate, err = c.estimateFor(v.ID, r, proj, results)
		out, errs = append(out, v), append(errs, err)
	}
	return out, errs
}

// withVariants adds the variants to the models found. A variant whose ID a file already has, or
// whose model was not found, is left out with a warning naming its config section.
func withVariants(found []scanned, configured map[string][]string) ([]Model, []string) {
	ids := make(map[string]bool, len(found))
	out := make([]Model, 0, len(found))
	for _, s := range found {
		ids[s.m.ID] = true
		out = append(out, s.m)
	}
	var warnings []string
	for _, s := range found {
		for _, v := range s.vars {
			if ids[v.ID] {
				warnings = append(warnings, fmt.Sprintf("[models.%q.variants.%q]: %s is already the ID of a model file; the variant is not served", v.VariantOf, v.Variant, v.ID))
				continue
			}
			ids[v.ID] = true
			out = append(out, v)
		}
	}
	for _, base := range slices.Sorted(maps.Keys(configured)) {
		if ids[base] || len(configured[base]) == 0 {
			continue
		}
		for _, name := range configured[base] {
			warnings = append(warnings, fmt.Sprintf("[models.%q.variants.%q]: no model %q was found; %s is not served", base, name, base, base+VariantSep+name))
		}
	}
	return out, warnings
}
