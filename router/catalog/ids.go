package catalog

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// entry is one model or projector candidate: a file, or the shards of a split model.
type entry struct {
	stem   string  // file name without .gguf and shard suffix
	files  []found // shards in order
	id     string
	fileID string // for a model renamed to its Hub name (hubIDs): the file-name ID, kept as an alias
}

func (e *entry) first() found { return e.files[0] }

// sig identifies the exact files an entry was parsed from, and the Ollama layer a blob is.
func (e *entry) sig() string {
	var b strings.Builder
	for _, f := range e.files {
		fmt.Fprintf(&b, "%s\x00%s\x00%d\x00%d\x00%s\n", f.path, f.real, f.size, f.mtime.UnixNano(), f.blob)
	}
	return b.String()
}

func (e *entry) paths() []string {
	out := make([]string, len(e.files))
	for i, f := range e.files {
		out[i] = f.path
	}
	return out
}

func isProjectorName(name string) bool { return strings.HasPrefix(strings.ToLower(name), "mmproj") }

func stemOf(name string) string { return name[:len(name)-len(".gguf")] }

// group turns the files into model entries and projector entries. Split models with missing or
// duplicate shards are reported as problems and left out.
func group(files []found) (models, projectors []*entry, problems []problem) {
	var named []found
	for _, f := range files {
		name := filepath.Base(f.path)
		switch {
		case f.blob == blobProjector:
			projectors = append(projectors, &entry{files: []found{f}})
		case f.blob == blobModel:
			models = append(models, &entry{stem: f.ollama[0].Name, files: []found{f}})
		case isProjectorName(name):
			projectors = append(projectors, &entry{stem: stemOf(name), files: []found{f}})
		default:
			named = append(named, f)
		}
	}
	sets := Splits(named, func(f found) (string, string) { return f.dir, filepath.Base(f.path) },
		func(f found, first, why string) {
			problems = append(problems, problem{filepath.Join(filepath.Dir(f.path), first), why})
		})
	for _, set := range sets {
		e := &entry{stem: stemOf(filepath.Base(set[0].path)), files: set}
		if sh, ok := ParseShard(filepath.Base(set[0].path)); ok {
			e.stem = sh.Prefix
		}
		models = append(models, e)
	}
	sort.Slice(models, func(i, j int) bool { return models[i].first().path < models[j].first().path })
	sort.Slice(projectors, func(i, j int) bool { return projectors[i].first().path < projectors[j].first().path })
	return models, projectors, problems
}

// labels lists an entry's IDs from least to most qualified, used when stems clash:
// "parent/stem", "grandparent/parent/stem", ... For the Hugging Face cache "org/name/stem" comes
// first, then with the folders inside the snapshot, then the on-disk forms. A blob of an Ollama
// store, whose stem is its Ollama name, is qualified by the store's folders: "models/llama3.2:3b",
// ".ollama/models/llama3.2:3b", ...
func (e *entry) labels() []string {
	f := e.first()
	var out []string
	if f.hf != nil {
		repo := f.hf.id()
		out = append(out, repo+"/"+e.stem)
		if f.hfSub != "" {
			out = append(out, repo+"/"+f.hfSub+"/"+e.stem)
		}
	}
	dir := filepath.ToSlash(filepath.Dir(f.path))
	if f.blob != "" {
		dir = filepath.ToSlash(f.store)
	}
	parts := strings.FieldsFunc(dir, func(r rune) bool { return r == '/' })
	for k := 1; k <= len(parts); k++ {
		out = append(out, strings.Join(parts[len(parts)-k:], "/")+"/"+e.stem)
	}
	if len(out) == 0 {
		out = append(out, e.stem)
	}
	return out
}

// assignIDs gives every entry its ID: the stem, or for stems shared by several entries the
// shortest labels that tell them apart.
func assignIDs(entries []*entry) {
	byStem := map[string][]*entry{}
	for _, e := range entries {
		byStem[e.stem] = append(byStem[e.stem], e)
	}
	for stem, group := range byStem {
		if len(group) == 1 {
			group[0].id = stem
			continue
		}
		labels := make([][]string, len(group))
		level := make([]int, len(group))
		for i, e := range group {
			labels[i] = e.labels()
		}
		for {
			seen := map[string][]int{}
			for i := range group {
				l := labels[i][min(level[i], len(labels[i])-1)]
				seen[l] = append(seen[l], i)
			}
			progress, clash := false, false
			for _, idx := range seen {
				if len(idx) < 2 {
					continue
				}
				clash = true
				for _, i := range idx {
					if level[i] < len(labels[i])-1 {
						level[i]++
						progress = true
					}
				}
			}
			if !clash || !progress {
				break
			}
		}
		used := map[string]int{}
		for i, e := range group { // group is in path order, so any numbering is stable
			id := labels[i][min(level[i], len(labels[i])-1)]
			if n := used[id]; n > 0 {
				e.id = fmt.Sprintf("%s#%d", id, n+1)
			} else {
				e.id = id
			}
			used[id]++
		}
	}
}
