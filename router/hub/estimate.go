// A remote model's memory estimate, from its GGUF headers read with HTTP range requests: the need
// its download badge is judged on (router/fit), with the catalog's own estimate.

package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/fit"
)

// headerStart is what the first request for a header asks for; each retry asks for as much
// again, up to the catalog's own bound (catalog.MaxHeaderBytes).
const headerStart = 1 << 20

// headerReader yields bytes fetched so far and remembers whether a decode wanted more.
type headerReader struct {
	r   *bytes.Reader
	dry bool
}

func (h *headerReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if err == io.EOF {
		h.dry = true
	}
	return n, err
}

// remoteFile is the start of one remote file, grown on demand.
type remoteFile struct {
	f   File
	buf []byte
}

// Estimate reads only the GGUF headers of q's files (and its projector) with HTTP range
// requests and estimates the memory a load needs, with the catalog's own estimate.
func (c *Client) Estimate(ctx context.Context, l *Listing, q Quant, p catalog.EstimateParams) (catalog.Estimate, catalog.HeaderFacts, error) {
	var files []*remoteFile // the model's, then the projector's
	for _, f := range q.All() {
		rf := &remoteFile{f: f}
		if err := c.grow(ctx, l, rf); err != nil {
			return catalog.Estimate{}, catalog.HeaderFacts{}, err
		}
		files = append(files, rf)
	}
	for {
		readers := make([]*headerReader, len(files))
		parts := make([]catalog.HeaderPart, len(files))
		for i, rf := range files {
			readers[i] = &headerReader{r: bytes.NewReader(rf.buf)}
			parts[i] = catalog.HeaderPart{R: readers[i], Size: rf.f.Size}
		}
		est, facts, err := catalog.EstimateParts(parts[:len(q.Files)], parts[len(q.Files):], p)
		if err == nil {
			return est, facts, nil
		}
		grew := false
		for i, rf := range files {
			if readers[i].dry && int64(len(rf.buf)) < min(rf.f.Size, catalog.MaxHeaderBytes) {
				if gerr := c.grow(ctx, l, rf); gerr != nil {
					return catalog.Estimate{}, catalog.HeaderFacts{}, gerr
				}
				grew = true
			}
		}
		if !grew {
			return catalog.Estimate{}, catalog.HeaderFacts{}, fmt.Errorf("%s: reading the GGUF header: %w", l.Repo, err)
		}
	}
}

// grow fetches the next stretch of a remote file's start with a range request.
func (c *Client) grow(ctx context.Context, l *Listing, rf *remoteFile) error {
	from := int64(len(rf.buf))
	n := max(int64(headerStart), from)
	to := min(from+n, rf.f.Size, catalog.MaxHeaderBytes) - 1
	if to < from {
		return fmt.Errorf("%s: %s: header larger than %d MiB", l.Repo, rf.f.Path, catalog.MaxHeaderBytes>>20)
	}
	req, err := c.newRequest(ctx, http.MethodGet, c.ResolveURL(l.Repo, l.Commit, rf.f.Path))
	if err != nil {
		return err
	}
	req.Header.Set("Range", "bytes="+strconv.FormatInt(from, 10)+"-"+strconv.FormatInt(to, 10))
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", l.Repo, rf.f.Path, err)
	}
	if resp.StatusCode != http.StatusPartialContent {
		if resp.StatusCode == http.StatusOK {
			resp.Body.Close()
			return fmt.Errorf("%s: %s: the server does not honour range requests", l.Repo, rf.f.Path)
		}
		return hubError(resp, l.Repo)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, to-from+1))
	if err != nil {
		return fmt.Errorf("%s: %s: %w", l.Repo, rf.f.Path, err)
	}
	if len(b) == 0 { // else the estimate would ask for the same range again, without end
		return fmt.Errorf("%s: %s: the server sent no bytes for %s", l.Repo, rf.f.Path, req.Header.Get("Range"))
	}
	rf.buf = append(rf.buf, b...)
	return nil
}

// CheckAccess asks the Hub for the first byte of q's first file, so that a gated repo (or a
// token without access) is refused before a pull starts rather than midway.
func (c *Client) CheckAccess(ctx context.Context, l *Listing, q Quant) error {
	if len(q.Files) == 0 {
		return fmt.Errorf("%s: quant %s has no files", l.Repo, q.Name)
	}
	req, err := c.newRequest(ctx, http.MethodGet, c.ResolveURL(l.Repo, l.Commit, q.Files[0].Path))
	if err != nil {
		return err
	}
	req.Header.Set("Range", "bytes=0-0")
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", l.Repo, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		return hubError(resp, l.Repo)
	}
	resp.Body.Close()
	return nil
}

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
