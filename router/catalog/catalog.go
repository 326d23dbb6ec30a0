// Package catalog finds GGUF models in folders, reads their headers, gives them stable readable
// IDs, pairs split files and multimodal projectors, estimates the memory a load needs and
// rescans when the folders change.
package catalog

import (
	"cmp"
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llamatray/llamatray/router/internal/textdist"
)

// Catalog is the set of models found by the last scan. Its methods are safe for concurrent use;
// reads never wait for a scan.
type Catalog struct {
	opts Options
	log  *slog.Logger

	snap atomic.Pointer[snapshot] // the last completed scan; replaced whole

	scanSem chan struct{} // holds one token while a scan runs: scans run one at a time

	mu    sync.Mutex // guards dirs, cache and the estimate fields of cached entries
	dirs  []string
	cache map[string]*cached // by first file path

	subMu sync.Mutex // guards subs
	subs  map[chan struct{}]struct{}
}

// snapshot is one scan's immutable result.
type snapshot struct {
	all      []Model // sorted by ID, hidden included
	visible  []Model // all minus hidden
	exact    map[string]int
	fold     map[string]int // lower-cased names; -1 = ambiguous
	hidden   []string       // IDs left out of visible
	warnings []string
	print    uint64 // fingerprint of what the scan saw
}

// New returns a catalog for o. It is empty until Scan runs.
func New(o Options) *Catalog {
	if o.Params == nil {
		o.Params = func(string) EstimateParams { return EstimateParams{ContextSize: 4096} }
	}
	if o.Aliases == nil {
		o.Aliases = func(string) []string { return nil }
	}
	if o.Variants == nil {
		o.Variants = func() map[string][]string { return nil }
	}
	if o.Hidden == nil {
		o.Hidden = func(string) bool { return false }
	}
	o.Logger = cmp.Or(o.Logger, slog.Default())
	c := &Catalog{
		opts:    o,
		log:     o.Logger,
		scanSem: make(chan struct{}, 1),
		dirs:    cleanDirs(o.Dirs),
		cache:   map[string]*cached{},
		subs:    map[chan struct{}]struct{}{},
	}
	c.snap.Store(&snapshot{exact: map[string]int{}, fold: map[string]int{}})
	return c
}

func cleanDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if d = strings.TrimSpace(d); d != "" {
			d = filepath.Clean(d)
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// Models returns the models of the last scan sorted by ID, hidden ones left out.
func (c *Catalog) Models() []Model {
	s := c.snap.Load()
	out := make([]Model, len(s.visible))
	for i, m := range s.visible {
		out[i] = m.clone()
	}
	return out
}

// Lookup finds a model by ID or alias: an exact match first, then a case-insensitive one when
// it is unambiguous. Hidden models are found too.
func (c *Catalog) Lookup(name string) (Model, bool) {
	m, ok := c.snap.Load().lookup(name)
	return m.clone(), ok
}

// Has reports whether Lookup finds name, without the copy of its model that Lookup makes (the
// check every proxied request makes).
func (c *Catalog) Has(name string) bool {
	_, ok := c.snap.Load().find(name)
	return ok
}

// Warnings returns the last scan's problems: missing folders and skipped files with reasons.
func (c *Catalog) Warnings() []string { return slices.Clone(c.snap.Load().warnings) }

// Subscribe returns a channel that receives a signal after each scan that changed the model
// list, an entry or its estimate (coalesced: one pending signal at most; never closed), and a
// function that ends the subscription.
func (c *Catalog) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	c.subMu.Lock()
	c.subs[ch] = struct{}{}
	c.subMu.Unlock()
	return ch, func() {
		c.subMu.Lock()
		delete(c.subs, ch)
		c.subMu.Unlock()
	}
}

// notify signals every subscriber without blocking.
func (c *Catalog) notify() {
	c.subMu.Lock()
	defer c.subMu.Unlock()
	for ch := range c.subs {
		select {
		case ch <- struct{}{}:
		default: // a signal is already pending
		}
	}
}

// SetDirs replaces the folders to scan and rescans them before returning.
func (c *Catalog) SetDirs(dirs []string) {
	c.mu.Lock()
	c.dirs = cleanDirs(dirs)
	c.mu.Unlock()
	if err := c.Scan(context.Background()); err != nil {
		c.log.Warn("model scan failed", "err", err)
	}
}

// Dirs returns the folders being scanned.
func (c *Catalog) Dirs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.dirs)
}

func (m Model) clone() Model {
	m.Files = slices.Clone(m.Files)
	m.Aliases = slices.Clone(m.Aliases)
	if m.Ollama != nil {
		names := make([]OllamaName, len(m.Ollama))
		for i, o := range m.Ollama {
			names[i] = o.clone()
		}
		m.Ollama = names
	}
	m.Defaults = cloneJSONObject(m.Defaults)
	return m
}

// Watch rescans whenever the model folders change, until ctx ends. Every interval it walks the
// folders and compares a fingerprint of what it sees (files, sizes, modification times, links,
// Hugging Face refs, Ollama manifests) with the one of the last scan; file headers are read only
// by the rescan, so a manifest written by ollama pull or removed by ollama rm is seen as a .gguf
// file is.
func (c *Catalog) Watch(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.Changed(ctx) {
			if err := c.Scan(ctx); err != nil && ctx.Err() == nil {
				c.log.Warn("model rescan failed", "err", err)
			}
		}
	}
}

// Changed reports whether the model folders differ from what the last scan saw.
func (c *Catalog) Changed(ctx context.Context) bool {
	l := list(ctx, c.Dirs())
	return ctx.Err() == nil && l.print != c.snap.Load().print
}

// Suggest returns up to n names (IDs or aliases) of listed models that look like name: ones
// containing it or contained in it, then ones within a small edit distance, closest first.
func (c *Catalog) Suggest(name string, n int) []string {
	s := c.snap.Load()
	q := strings.ToLower(strings.TrimSpace(name))
	if q == "" || n <= 0 {
		return nil
	}
	type cand struct {
		name  string
		score int // lower is better
	}
	var cands []cand
	for _, m := range s.visible {
		best := cand{score: -1}
		for _, nm := range append([]string{m.ID}, m.Aliases...) {
			l := strings.ToLower(nm)
			score := -1
			switch {
			case l == q:
				score = 0
			case strings.Contains(l, q) || strings.Contains(q, l):
				score = 1 + max(len(l)-len(q), len(q)-len(l))/4
			default:
				if d := textdist.Levenshtein(q, l); d <= max(2, len(q)/3) {
					score = 100 + d
				}
			}
			if score >= 0 && (best.score < 0 || score < best.score) {
				best = cand{name: nm, score: score}
			}
		}
		if best.score >= 0 {
			cands = append(cands, best)
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Or(cmp.Compare(a.score, b.score), strings.Compare(a.name, b.name)) })
	out := make([]string, 0, min(n, len(cands)))
	for _, cd := range cands[:cap(out)] {
		out = append(out, cd.name)
	}
	return out
}
