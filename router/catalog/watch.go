package catalog

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/internal/textdist"
)

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
				score = 1 + abs(len(l)-len(q))/4
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
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].score != cands[j].score {
			return cands[i].score < cands[j].score
		}
		return cands[i].name < cands[j].name
	})
	var out []string
	for _, cd := range cands {
		if len(out) == n {
			break
		}
		out = append(out, cd.name)
	}
	return out
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
