package catalog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
)

// cached is the parse result of one entry, kept across scans while its files are unchanged.
type cached struct {
	sig string
	h   *header
	err error

	// The last estimates, by their inputs (a model's and its variants'), reused while those are
	// unchanged.
	ests map[string]estResult
}

type estResult struct {
	est Estimate
	err error
}

// maxEstimates bounds how many estimates one file keeps.
const maxEstimates = 16

// errNotModel marks files that are valid GGUF but not models or projectors (LoRA adapters,
// imatrix files): skipped without a warning.
var errNotModel = errors.New("not a model")

// Scan reads the model folders and replaces the catalog with what it finds. Only new or
// changed files are read. A missing folder or a bad file becomes a warning (see Warnings),
// logged once per file version; Scan fails only when ctx ends, and then the catalog keeps its
// previous contents.
func (c *Catalog) Scan(ctx context.Context) error {
	select {
	case c.scanSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.scanSem }()

	l := list(ctx, c.Dirs())
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("model scan: %w", err)
	}
	models, projectors, problems := group(l.files)
	problems = append(l.problems, problems...)
	for _, p := range problems {
		c.log.Warn("model files skipped", "file", p.file, "reason", p.reason)
	}

	all := append(append([]*entry(nil), models...), projectors...)
	results, err := c.parseAll(ctx, all)
	if err != nil {
		return fmt.Errorf("model scan: %w", err)
	}
	good, projs, unread := sortParsed(all, results)
	problems = append(problems, unread...)
	assignIDs(good)
	renamed, hubWarnings := hubIDs(good, results)
	if c.opts.Renamed != nil {
		c.opts.Renamed(renamed)
	}
	variants := c.opts.Variants()
	found, unestimated, err := c.models(ctx, good, results, projs, variants)
	if err != nil {
		return fmt.Errorf("model scan: %w", err)
	}
	problems = append(problems, unestimated...)
	out, vwarn := withVariants(found, variants)
	c.withDrafts(out)
	c.prune(all)

	warnings := append(vwarn, hubWarnings...)
	for _, p := range problems {
		warnings = append(warnings, p.String())
	}
	s := buildSnapshot(out, c.opts.Hidden, warnings, l.print)
	sort.Strings(s.warnings)
	old := c.snap.Swap(s)
	if !reflect.DeepEqual(old.all, s.all) || !reflect.DeepEqual(old.hidden, s.hidden) {
		c.notify()
	}
	return nil
}

// projectors are a scan's projector files, found for a model by its folder or, for Ollama's
// projector layers, by the file they are.
type projectors struct {
	byDir  map[string][]*entry
	byReal map[string]*entry
}

// of is the projector of model e, or nil.
func (p projectors) of(e *entry) *entry {
	if proj := pickProjector(e, p.byDir[e.first().dir]); proj != nil {
		return proj
	}
	return ollamaProjector(e, p.byReal)
}

// sortParsed sorts the parsed entries into models and projectors, with a problem for each that
// did not read (a file that is no model at all is left out silently).
func sortParsed(all []*entry, results map[*entry]*cached) (good []*entry, projs projectors, problems []problem) {
	projs = projectors{byDir: map[string][]*entry{}, byReal: map[string]*entry{}}
	for _, e := range all {
		switch r := results[e]; {
		case errors.Is(r.err, errNotModel):
		case r.err != nil:
			problems = append(problems, e.first().trouble(r.err.Error()))
		case r.h.typ == "projector":
			projs.byDir[e.first().dir] = append(projs.byDir[e.first().dir], e)
			projs.byReal[e.first().real] = e
		default:
			good = append(good, e)
		}
	}
	return good, projs, problems
}

// scanned is one model of a scan with its configured variants, each with the error of its
// memory estimate, if any.
type scanned struct {
	m       Model
	err     error
	vars    []Model
	varErrs []error
}

// models makes the catalog's models of the entries good, with their projectors and configured
// variants, in parallel; a problem for each estimate that failed.
func (c *Catalog) models(ctx context.Context, good []*entry, results map[*entry]*cached, projs projectors, variants map[string][]string) ([]scanned, []problem, error) {
	out := make([]scanned, len(good))
	parallel(ctx, len(good), func(i int) {
		e, s := good[i], &out[i]
		proj := projs.of(e)
		s.m, s.err = c.model(e, results[e], proj, results)
		s.vars, s.varErrs = c.variants(s.m, variants[s.m.ID], results[e], proj, results)
	})
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var problems []problem
	for i, s := range out {
		if s.err != nil {
			problems = append(problems, good[i].first().trouble("no memory estimate: "+s.err.Error()))
		}
		for j, err := range s.varErrs {
			if err != nil {
				problems = append(problems, good[i].first().trouble(s.vars[j].ID+": no memory estimate: "+err.Error()))
			}
		}
	}
	return out, problems, nil
}

// parseAll returns the parse result of every entry, from the cache or read by a small pool of
// workers. Each newly found problem is logged once.
func (c *Catalog) parseAll(ctx context.Context, entries []*entry) (map[*entry]*cached, error) {
	results := make(map[*entry]*cached, len(entries))
	var todo []*entry
	c.mu.Lock()
	for _, e := range entries {
		if r, ok := c.cache[e.first().path]; ok && r.sig == e.sig() {
			results[e] = r
		} else {
			todo = append(todo, e)
		}
	}
	c.mu.Unlock()

	done := make([]*cached, len(todo))
	parallel(ctx, len(todo), func(i int) {
		e := todo[i]
		h, err := parseHeader(e.first().path, e.paths())
		if err == nil {
			err = classify(e, h)
		}
		done[i] = &cached{sig: e.sig(), h: h, err: err}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	for i, e := range todo {
		r := done[i]
		switch {
		case errors.Is(r.err, errNotModel):
			c.log.Debug("skipped, not a model", "file", e.first().path, "reason", r.err.Error())
		case r.err != nil:
			c.log.Warn("model file skipped", "file", e.first().path, "reason", r.err.Error())
		default:
			c.log.Debug("read model header", "file", e.first().path)
		}
		results[e] = r
	}
	c.mu.Lock()
	for i, e := range todo {
		c.cache[e.first().path] = done[i]
	}
	c.mu.Unlock()
	return results, nil
}

// classify refuses files that are valid GGUF but cannot be served as a model or projector. A
// blob of an Ollama store must hold what its layer says.
func classify(e *entry, h *header) error {
	switch e.first().blob {
	case blobProjector:
		if h.typ != "projector" {
			return fmt.Errorf("the projector layer holds a %s", h.typ)
		}
		return nil
	case blobModel:
		if h.typ != "model" {
			return fmt.Errorf("the model layer holds a %s, not a model", h.typ)
		}
	}
	projName := isProjectorName(filepath.Base(e.first().path))
	switch {
	case h.typ == "projector":
		return nil
	case projName:
		return fmt.Errorf("named like a projector (mmproj) but holds a %s", h.typ)
	case h.typ != "model":
		return fmt.Errorf("%w (%s file)", errNotModel, h.typ)
	case h.arch == "diffusion":
		return errors.New("an image diffusion model, which llama-server does not run")
	}
	return nil
}

// parallel runs f(0..n-1) on a small pool of goroutines; it stops handing out work when ctx
// ends.
func parallel(ctx context.Context, n int, f func(i int)) {
	workers := min(n, max(2, min(runtime.GOMAXPROCS(0), 8)))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
}

// prune forgets cached files that are gone.
func (c *Catalog) prune(seen []*entry) {
	keep := make(map[string]bool, len(seen))
	for _, e := range seen {
		keep[e.first().path] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.DeleteFunc(c.cache, func(k string, _ *cached) bool { return !keep[k] })
}

// pickProjector chooses the projector for a model among those of its folder: the one whose
// name shares the longest prefix with the model's, then the smallest, then by name.
func pickProjector(m *entry, projs []*entry) *entry {
	var best *entry
	bestScore := -1
	stem := strings.ToLower(m.stem)
	for _, p := range projs {
		name := strings.TrimLeft(strings.TrimPrefix(strings.ToLower(p.stem), "mmproj"), "-_.")
		score := commonPrefix(stem, name)
		switch {
		case best == nil, score > bestScore,
			score == bestScore && p.first().size < best.first().size:
			best, bestScore = p, score
		}
	}
	return best
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// model builds the catalog entry of e, estimating with the parameters configured for its ID.
func (c *Catalog) model(e *entry, r *cached, proj *entry, results map[*entry]*cached) (Model, error) {
	h := r.h
	m := Model{
		ID:            e.id,
		Path:          e.first().path,
		Files:         e.paths(),
		Aliases:       cleanAliases(withFileID(c.opts.Aliases(e.id), e.fileID), e.id),
		FileID:        e.fileID,
		Architecture:  h.arch,
		Name:          h.name,
		Parameters:    h.params,
		Quantization:  h.quant,
		ContextLength: h.ctxLen,
		EmbeddingLen:  h.embdLen,
		Pooling:       h.pooling,
		Rerank:        h.rerank,
		ChatTemplate:  h.chatTemplate,
		Vocab:         h.vocab,
		Splits:        len(e.files),
		Root:          e.first().root,
	}
	m.HubRepo, m.HubName = hubNameOf(e, h.quant)
	if refs := e.first().ollama; len(refs) > 0 {
		m.Ollama = make([]OllamaName, len(refs))
		for i, r := range refs {
			m.Ollama[i] = r.clone()
		}
		m.Defaults = cloneJSONObject(refs[0].Defaults)
	}
	for _, f := range e.files {
		m.SizeBytes += f.size
		if f.mtime.After(m.ModTime) {
			m.ModTime = f.mtime
		}
	}
	if proj != nil {
		m.Mmproj = proj.first().path
	}
	var err error
	m.Estimate, err = c.estimateFor(e.id, r, proj, results)
	if err != nil {
		m.EstimateError = "no memory estimate: " + err.Error()
	}
	return m, err
}

// estimateFor estimates model id (the file of r, with projector proj) with the parameters
// configured for id, or takes the estimate r keeps for those parameters.
func (c *Catalog) estimateFor(id string, r *cached, proj *entry, results map[*entry]*cached) (Estimate, error) {
	var ph *header
	projSig := ""
	if proj != nil {
		ph, projSig = results[proj].h, proj.sig()
	}
	p := c.opts.Params(id)
	key := fmt.Sprintf("%+v\x00%s", p, projSig)
	c.mu.Lock()
	res, hit := r.ests[key]
	c.mu.Unlock()
	if hit {
		return res.est, res.err
	}
	res.est, res.err = estimate(r.h, ph, p)
	if res.err != nil {
		c.log.Warn("memory estimate failed", "model", id, "reason", res.err.Error())
	}
	c.mu.Lock()
	if r.ests == nil || len(r.ests) >= maxEstimates {
		r.ests = map[string]estResult{}
	}
	r.ests[key] = res
	c.mu.Unlock()
	return res.est, res.err
}

// withFileID is the configured aliases of a model renamed to its Hub name, with its file-name ID
// last (so that what named it before still does); aliases as they are for any other model.
func withFileID(aliases []string, fileID string) []string {
	if fileID == "" {
		return aliases
	}
	return append(slices.Clone(aliases), fileID)
}

func cleanAliases(aliases []string, id string) []string {
	var out []string
	for _, a := range aliases {
		if a = strings.TrimSpace(a); a != "" && a != id && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// buildSnapshot indexes models (sorted by ID) for lookups: IDs first, then aliases that no ID or
// earlier alias holds, then Hugging Face names, then Ollama names.
func buildSnapshot(models []Model, hidden func(id string) bool, warnings []string, print uint64) *snapshot {
	idx := make([]int, len(models))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return models[idx[a]].ID < models[idx[b]].ID })
	s := &snapshot{exact: map[string]int{}, fold: map[string]int{}, warnings: warnings, print: print}
	for _, i := range idx {
		s.all = append(s.all, models[i])
		if !hidden(models[i].ID) {
			s.visible = append(s.visible, models[i])
		} else {
			s.hidden = append(s.hidden, models[i].ID)
		}
	}
	s.index()
	return s
}

// index makes the names the models are found by, in order of precedence: IDs, then aliases (a
// warning for one that names another model), ORG/REPO:QUANT names, then Ollama's names; exactly
// and case-insensitively.
func (s *snapshot) index() {
	for i, m := range s.all {
		s.exact[m.ID] = i
		foldAdd(s.fold, m.ID, i)
	}
	for i, m := range s.all {
		for _, a := range m.Aliases {
			if j, taken := s.exact[a]; !taken {
				s.exact[a] = i
			} else if j != i {
				s.warnings = append(s.warnings, fmt.Sprintf("%s: alias %q is already the name of %s", m.ID, a, s.all[j].ID))
			}
		}
	}
	for i, m := range s.all { // ORG/REPO:QUANT names, after IDs and aliases
		if m.HubName == "" {
			continue
		}
		if _, taken := s.exact[m.HubName]; !taken {
			s.exact[m.HubName] = i
		}
		foldAdd(s.fold, m.HubName, i)
	}
	idFold := make(map[string]bool, len(s.all))
	for _, m := range s.all {
		idFold[strings.ToLower(m.ID)] = true
	}
	for i, m := range s.all {
		for _, a := range m.Aliases {
			if !idFold[strings.ToLower(a)] {
				foldAdd(s.fold, a, i)
			}
		}
	}
	for i, m := range s.all { // Ollama's names, last
		for _, o := range m.Ollama {
			for _, n := range ollamaLookupNames(o.Name) {
				if _, taken := s.exact[n]; !taken {
					s.exact[n] = i
				}
				if l := strings.ToLower(n); !idFold[l] || l == strings.ToLower(m.ID) {
					foldAdd(s.fold, n, i)
				}
			}
		}
	}
}

// foldAdd maps the lower-cased name to i, or to -1 when another model already holds it.
func foldAdd(fold map[string]int, name string, i int) {
	k := strings.ToLower(name)
	if j, ok := fold[k]; ok && j != i {
		fold[k] = -1
		return
	}
	fold[k] = i
}
