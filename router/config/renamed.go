package config

import (
	"maps"
	"slices"
)

// Renamed is c with the settings kept under the old IDs of renamed models moved to their new IDs:
// renamed maps a new ID to the old one (the catalog names a model pulled from the Hugging Face Hub
// ORG/REPO:QUANT, where it was named by its file before). For each rename:
//
//   - the section [models."OLD"] (its variants, aliases and pins with it) becomes
//     [models."NEW"], unless a section for NEW exists: then that one counts and OLD's is left as it
//     is (it names no model any more);
//   - default_model = "OLD" becomes "NEW", and so does draft = "OLD" in any section or variant.
//
// changed says whether anything moved. c is left as it was. The file keeps the old names until
// the configuration is next written (Service.Edit), which writes the new ones.
func (c Config) Renamed(renamed map[string]string) (out Config, changed bool) {
	out = c
	edit := func() { // the first change works on a copy
		if !changed {
			out, changed = c.Clone(), true
		}
	}
	for _, newID := range slices.Sorted(maps.Keys(renamed)) {
		oldID := renamed[newID]
		if oldID == "" || oldID == newID {
			continue
		}
		if _, ok := out.Models[oldID]; ok {
			if _, taken := out.Models[newID]; !taken {
				edit()
				out.Models[newID] = out.Models[oldID]
				delete(out.Models, oldID)
			}
		}
		if out.DefaultModel == oldID {
			edit()
			out.DefaultModel = newID
		}
		for _, id := range slices.Sorted(maps.Keys(out.Models)) {
			if out.Models[id].Draft == oldID {
				edit()
				m := out.Models[id]
				m.Draft = newID
				out.Models[id] = m
			}
			for name, v := range out.Models[id].Variants {
				if v.Draft == oldID {
					edit()
					v.Draft = newID
					out.Models[id].Variants[name] = v
				}
			}
		}
	}
	return out, changed
}
