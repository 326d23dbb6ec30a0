package hub

import (
	"context"
	"errors"
	"sync"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/fit"
)

// Starter is a model suggested before anything is searched: what it is good for and why.
type Starter struct {
	Use  string // chat, coding, embeddings, rerank
	Name string // ORG/REPO:QUANT
	Why  string
}

// Starters is the short list the Get-models window offers first: small, well-known GGUF repos
// that llama-server runs as they are, one or two per use. StartersOnHub checks them against the
// Hub before they are shown.
var Starters = []Starter{
	{"chat", "ggml-org/gemma-3-1b-it-GGUF:Q4_K_M", "Google's Gemma 3, 1B: a quick chat model that runs anywhere"},
	{"chat", "Qwen/Qwen3-4B-GGUF:Q4_K_M", "Qwen3 4B: a capable chat model, with thinking"},
	{"coding", "Qwen/Qwen2.5-Coder-7B-Instruct-GGUF:Q4_K_M", "Qwen2.5 Coder 7B: code chat and completion"},
	{"coding", "ggml-org/Qwen2.5-Coder-1.5B-Q8_0-GGUF", "Qwen2.5 Coder 1.5B: fast fill-in-the-middle for editors"},
	{"embeddings", "ggml-org/embeddinggemma-300M-GGUF:Q8_0", "EmbeddingGemma 300M: text embeddings for search and RAG"},
	{"embeddings", "nomic-ai/nomic-embed-text-v1.5-GGUF:Q8_0", "Nomic Embed v1.5: text embeddings"},
	{"rerank", "gpustack/bge-reranker-v2-m3-GGUF:Q8_0", "BGE reranker v2 m3: ranks documents for a query"},
}

// StarterFit is a starter as it stands on the Hub now: its quant with sizes and fit badge.
type StarterFit struct {
	Starter
	QuantFit
}

// StartersOnHub checks each starter against the Hub (its listing and quant; four at a time) and
// returns those still there, in list order, with their fit badges against room. A starter the
// Hub no longer has, or whose quant is gone, is left out; when the Hub cannot be reached at all
// the error says so.
func (c *Client) StartersOnHub(ctx context.Context, list []Starter, p catalog.EstimateParams, room fit.Room, downloaded func(string) bool) ([]StarterFit, error) {
	out := make([]*StarterFit, len(list))
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, s := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ref, err := ParseRef(s.Name)
			if err != nil {
				errs[i] = err
				return
			}
			l, err := c.Files(ctx, ref.Repo)
			if err != nil {
				errs[i] = err
				return
			}
			q, err := l.Pick(ref.Quant)
			if err != nil {
				errs[i] = err
				return
			}
			one := &Listing{Repo: l.Repo, Commit: l.Commit, Gated: l.Gated, Quants: []Quant{q}}
			fits := c.Badges(ctx, one, p, room, downloaded, true)
			out[i] = &StarterFit{Starter: s, QuantFit: fits[0]}
		}()
	}
	wg.Wait()
	var shown []StarterFit
	var unreachable error
	for i, sf := range out {
		if sf != nil {
			shown = append(shown, *sf)
		} else if errors.Is(errs[i], ErrUnreachable) && unreachable == nil {
			unreachable = errs[i]
		}
	}
	if len(shown) == 0 && unreachable != nil {
		return nil, unreachable
	}
	return shown, nil
}
