package catalog

import (
	"fmt"
	"maps"
	"slices"
)

// VariantSep joins a model's ID and a variant's name into the variant's ID (as config does).
const VariantSep = "@"

// variants builds the entries of base's variants (names): each a copy of base with its own ID,
// aliases and estimate, and no Hugging Face or Ollama name (those name the file's own entry).
// errs holds each one's estimate error.
func (c *Catalog) variants(base Model, names []string, r *cached, proj *entry, results map[*entry]*cached) (out []Model, errs []error) {
	if len(names) == 0 {
		return nil, nil
	}
	var ph *header
	projSig := ""
	if proj != nil {
		ph = results[proj].h
		projSig = proj.sig()
	}
	for _, name := range names {
		v := base.clone()
		v.ID = base.ID + VariantSep + name
		v.VariantOf, v.Variant = base.ID, name
		old := ""
		if base.FileID != "" {
			old = base.FileID + VariantSep + name // its ID before its model took its Hub name
		}
		v.Aliases = cleanAliases(withFileID(c.opts.Aliases(v.ID), old), v.ID)
		v.FileID = old
		v.HubName = ""
		v.Ollama = nil
		var err error
		v.Estimate, err = c.estimateFor(v.ID, r, ph, projSig)
		out, errs = append(out, v), append(errs, err)
	}
	return out, errs
}

// withVariants adds the variants to the models found. A variant whose ID a file already has, or
// whose model was not found, is left out with a warning naming its config section.
func withVariants(models []Model, vars [][]Model, configured map[string][]string) ([]Model, []string) {
	ids := make(map[string]bool, len(models))
	for _, m := range models {
		ids[m.ID] = true
	}
	var warnings []string
	out := models
	for _, vs := range vars {
		for _, v := range vs {
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
