package hub

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/fit"
)

// QuantFit is one quant of a repo as the Get-models views show it: sizes, whether it is on this
// machine already, and its fit badge.
type QuantFit struct {
	Quant
	Model       string  `json:"model"`                  // ORG/REPO:QUANT
	Downloaded  bool    `json:"downloaded"`             // on this machine already
	Fit         fit.Fit `json:"fit,omitempty"`          // fits, fits_after_unload, too_large
	FitReason   string  `json:"fit_reason,omitempty"`   // the fit in words, or why it is unknown
	MemoryBytes int64   `json:"memory_bytes,omitempty"` // the estimate: RAM + VRAM
	Gated       bool    `json:"gated,omitempty"`        // the repo asks users to accept its terms
	// NoAccess, for a gated repo, says why this client may not download it and how to get
	// access; "" when it may.
	NoAccess string `json:"no_access,omitempty"`
}

// accessHelp says how to get a gated repo.
func accessHelp(repo string) string {
	return fmt.Sprintf("%s is gated: sign in at https://huggingface.co/%s and accept its terms, then give Llamatray a token with access (HF_TOKEN, or the Hub's token file $HF_HOME/token, which `hf auth login` writes)", repo, repo)
}

// Badges judges every quant of l against room, reading only GGUF headers (four quants at a
// time). downloaded, if not nil, tells names already on this machine. With judge false it gives
// sizes only.
func (c *Client) Badges(ctx context.Context, l *Listing, p catalog.EstimateParams, room fit.Room, downloaded func(name string) bool, judge bool) []QuantFit {
	out := make([]QuantFit, len(l.Quants))
	noAccess := ""
	if l.Gated && len(l.Quants) > 0 {
		var he *Error
		if err := c.CheckAccess(ctx, l, l.Quants[0]); errors.As(err, &he) && he.Gated() {
			noAccess = accessHelp(l.Repo)
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, q := range l.Quants {
		out[i] = QuantFit{Quant: q, Model: Ref{Repo: l.Repo, Quant: q.Name}.String(), Gated: l.Gated, NoAccess: noAccess}
		if downloaded != nil {
			out[i].Downloaded = downloaded(out[i].Model)
		}
		if !judge {
			continue
		}
		if noAccess != "" {
			out[i].FitReason = "its header cannot be read without access"
			continue
		}
		wg.Add(1)
		go func(qf *QuantFit) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			est, _, err := c.Estimate(ctx, l, qf.Quant, p)
			if err != nil {
				qf.FitReason = "cannot estimate: " + err.Error()
				return
			}
			qf.MemoryBytes = est.RAM + est.VRAM
			qf.Fit, qf.FitReason = fit.For(qf.MemoryBytes, room)
		}(&out[i])
	}
	wg.Wait()
	return out
}
