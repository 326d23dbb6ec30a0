package catalog

import (
	"cmp"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// quantRe matches one name token that is a quantization tag as GGUF file names on the Hugging
// Face Hub spell it: Q4_K_M, IQ2_XXS, Q8_0, F16, BF16, MXFP4_MOE, TQ1_0, ...
var quantRe = regexp.MustCompile(`(?i)^(I?Q[1-8](_[0-9A-Z]+)+|BF16|F16|F32|F64|MXFP4(_MOE)?|TQ[12]_0)$`)

// QuantOf returns the quantization tag in a GGUF file's path (upper-cased), "" when the name
// has none: the last "-" or "."-separated token of the file name that is a tag, else such a
// token of its folder. It is the quant of an ORG/REPO:QUANT name, as llama.cpp's -hf reads it.
func QuantOf(p string) string {
	p = strings.ReplaceAll(p, "\\", "/")
	base := path.Base(p)
	if isGGUF(base) {
		base = stemOf(base)
	}
	if sh, ok := ParseShard(path.Base(p)); ok {
		base = sh.Prefix
	}
	if q := lastQuantToken(base); q != "" {
		return q
	}
	if dir := path.Dir(p); dir != "." && dir != "/" {
		return lastQuantToken(path.Base(dir))
	}
	return ""
}

func lastQuantToken(s string) string {
	toks := strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == '.' })
	for i := len(toks) - 1; i >= 0; i-- {
		if quantRe.MatchString(toks[i]) {
			return strings.ToUpper(toks[i])
		}
	}
	return ""
}

// HubName is the ORG/REPO:QUANT name of a model pulled from the Hugging Face Hub, "" when repo
// or quant is unknown.
func HubName(repo, quant string) string {
	if repo == "" || quant == "" {
		return ""
	}
	return repo + ":" + quant
}

// hubNameOf names a model found in a Hugging Face cache: its repo and the quant of its file
// name, else of its header.
func hubNameOf(e *entry, headerQuant string) (repo, name string) {
	f := e.first()
	if f.hf == nil {
		return "", ""
	}
	repo = f.hf.id()
	rel := path.Base(f.path)
	if f.hfSub != "" {
		rel = f.hfSub + "/" + rel
	}
	q := QuantOf(rel)
	q = cmp.Or(q, strings.ToUpper(headerQuant))
	return repo, HubName(repo, q)
}

// HeaderPart is the start of one GGUF file read from elsewhere (an HTTP range request): R yields
// the file's first bytes, Size is the whole file's size.
type HeaderPart struct {
	R    io.Reader
	Size int64
}

// HeaderFacts is what a remote header tells before a download.
type HeaderFacts struct {
	Architecture  string
	Parameters    int64
	Quantization  string
	ContextLength int
}

// EstimateParts estimates, with the catalog's own estimate, the memory a model needs from the
// headers of its files (shards in order) and, when proj is not empty, of its projector. A header
// longer than what an R yields fails as a truncated file: the caller, seeing its reader ran dry,
// reads more and retries.
func EstimateParts(parts, proj []HeaderPart, p EstimateParams) (Estimate, HeaderFacts, error) {
	read := func(ps []HeaderPart) (*header, error) {
		fhs := make([]*fileHeader, len(ps))
		for i, hp := range ps {
			fh, err := decodeHeader(hp.R, hp.Size)
			if err != nil {
				return nil, fmt.Errorf("file %d: %w", i+1, err)
			}
			fhs[i] = fh
		}
		return headerOf(fhs)
	}
	if len(parts) == 0 {
		return Estimate{}, HeaderFacts{}, fmt.Errorf("no model files")
	}
	m, err := read(parts)
	if err != nil {
		return Estimate{}, HeaderFacts{}, err
	}
	var ph *header
	if len(proj) > 0 {
		if ph, err = read(proj); err != nil {
			return Estimate{}, HeaderFacts{}, fmt.Errorf("projector: %w", err)
		}
	}
	facts := HeaderFacts{Architecture: m.arch, Parameters: m.params, Quantization: m.quant, ContextLength: m.ctxLen}
	est, err := estimate(m, ph, p)
	return est, facts, err
}

// IsProjector tells a multimodal projector (mmproj) file by its name.
func IsProjector(name string) bool { return isProjectorName(path.Base(name)) }

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
		slices.SortStableFunc(cs, func(a, b cand) int { return hubOrder(a.e.first(), b.e.first()) })
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

// hubOrder orders files by which takes a shared Hub name first.
func hubOrder(a, b found) int {
	depth := func(f found) int {
		if f.hfSub == "" {
			return 0
		}
		return strings.Count(f.hfSub, "/") + 1
	}
	return cmp.Or(cmp.Compare(revRank(a), revRank(b)), cmp.Compare(depth(a), depth(b)), b.mtime.Compare(a.mtime),
		strings.Compare(filepath.ToSlash(a.path), filepath.ToSlash(b.path)))
}

// revRank is the preference of a file's snapshot revision: 0 = refs/main, 1 = another ref, 2 = none.
func revRank(f found) int {
	if p, ok := f.hf.refs[f.rev]; ok {
		return p
	}
	return 2
}
