package catalog

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// hubIDs renames the models found in a Hugging Face cache to the names they were pulled by: a model
// whose repo and quant are known gets ORG/REPO:QUANT as its ID, and the file-name ID assignIDs gave
// it stays as an alias (e.fileID). Everything else keeps its file-name ID. It returns the renames,
// new ID → file-name ID, and a warning for each name that more than one file could take.
//
// Collisions: when several files give the same name (case-insensitively), one takes it — the one
// of the preferred revision (refs/main first, then another ref, then any), then the one least
// deep in its snapshot, then the newest, then by path — and the others keep their file-name IDs. A
// name that another model already has as its file-name ID (case-insensitively) is left to it.
func hubIDs(entries []*entry, results map[*entry]*cached) (renamed map[string]string, warnings []string) {
	type cand struct {
		e    *entry
		name string
	}
	byName := map[string][]cand{}
	var names []string
	taken := map[string]bool{} // lower-cased file-name IDs of models that do not take a Hub name
	for _, e := range entries {
		_, name := hubNameOf(e, results[e].h.quant)
		if name == "" {
			taken[strings.ToLower(e.id)] = true
			continue
		}
		k := strings.ToLower(name)
		if _, ok := byName[k]; !ok {
			names = append(names, k)
		}
		byName[k] = append(byName[k], cand{e, name})
	}
	sort.Strings(names)
	renamed = map[string]string{}
	for _, k := range names {
		cs := byName[k]
		sort.SliceStable(cs, func(i, j int) bool { return hubPreferred(cs[i].e, cs[j].e) })
		if taken[k] {
			warnings = append(warnings, fmt.Sprintf("%s: the name is already a model's ID; %s keeps its file name", cs[0].name, cs[0].e.id))
			continue
		}
		for _, c := range cs[1:] {
			warnings = append(warnings, fmt.Sprintf("%s: %s has the same name; it keeps its file name %s", cs[0].name, c.e.first().path, c.e.id))
		}
		w := cs[0].e
		w.fileID, w.id = w.id, cs[0].name
		renamed[w.id] = w.fileID
	}
	return renamed, warnings
}

// hubPreferred says whether a takes a shared Hub name before b.
func hubPreferred(a, b *entry) bool {
	fa, fb := a.first(), b.first()
	if ra, rb := revRank(fa), revRank(fb); ra != rb {
		return ra < rb
	}
	if da, db := strings.Count(fa.hfSub, "/")+boolInt(fa.hfSub != ""), strings.Count(fb.hfSub, "/")+boolInt(fb.hfSub != ""); da != db {
		return da < db
	}
	if !fa.mtime.Equal(fb.mtime) {
		return fa.mtime.After(fb.mtime)
	}
	return filepath.ToSlash(fa.path) < filepath.ToSlash(fb.path)
}

// revRank is the preference of a file's snapshot revision: 0 = refs/main, 1 = another ref, 2 = none.
func revRank(f found) int {
	if p, ok := f.hf.refs[f.rev]; ok {
		return p
	}
	return 2
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
