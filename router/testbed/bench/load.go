package main

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/testbed/bench/harness"
)

// target is one side of the comparison.
type target struct {
	name  string                       // "direct" or "router"
	url   string                       // its /v1/chat/completions
	model string                       // the model name in request bodies
	cpu   func() (time.Duration, bool) // CPU time used so far by the server process (llama-server, or Llamatray without its children)
}

// cellSpec is one load shape.
type cellSpec struct {
	stream      bool
	concurrency int
}

func (c cellSpec) mode() string {
	if c.stream {
		return "stream"
	}
	return "json"
}

// cellResult is what one target did under one cell's load.
type cellResult struct {
	spec     cellSpec
	target   string
	elapsed  time.Duration
	ok       int
	failures int
	lat      []time.Duration // latency of each complete answer
	ttfb     []time.Duration // first body byte of each complete stream
	firstErr string
	cpu      time.Duration // CPU time of this process: the load client
	srvCPU   time.Duration // CPU time of the target's server process
	rounds   []round       // each slice added, in order: the spread between rounds
}

// round is one slice of a cell, kept to show how much the rounds of a run differ.
type round struct {
	rps float64
	cpu time.Duration // the server's CPU time per complete answer
	p50 time.Duration
}

// serverCPUPerRequest is the target process's CPU time per complete answer.
func (r cellResult) serverCPUPerRequest() time.Duration {
	if r.ok == 0 {
		return 0
	}
	return r.srvCPU / time.Duration(r.ok)
}

func (r cellResult) rps() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ok) / r.elapsed.Seconds()
}

// loadParams are the request shape shared by every cell.
type loadParams struct {
	maxTokens int
	seed      int
}

// runCell measures one cell for both targets: slices rounds, each giving every target d/slices,
// the target that goes first alternating, so load spikes of a shared machine hit both alike.
func runCell(ctx context.Context, c *http.Client, targets []target, spec cellSpec, p loadParams, d time.Duration, slices int) ([]cellResult, error) {
	out := make([]cellResult, len(targets))
	for i, t := range targets {
		out[i] = cellResult{spec: spec, target: t.name}
	}
	for s := range slices {
		for k := range targets {
			i := (k + s) % len(targets)
			r, err := runSlice(ctx, c, targets[i], spec, p, d/time.Duration(slices))
			if err != nil {
				return out, err
			}
			out[i].add(r)
		}
	}
	return out, nil
}

// add accumulates a slice into r.
func (r *cellResult) add(s cellResult) {
	r.elapsed += s.elapsed
	r.cpu += s.cpu
	r.srvCPU += s.srvCPU
	r.ok += s.ok
	r.failures += s.failures
	r.lat = append(r.lat, s.lat...)
	r.ttfb = append(r.ttfb, s.ttfb...)
	r.rounds = append(r.rounds, round{rps: s.rps(), cpu: s.serverCPUPerRequest(), p50: harness.Percentile(s.lat, 50)})
	if r.firstErr == "" {
		r.firstErr = s.firstErr
	}
}

// runSlice keeps spec.concurrency requests in flight against t for d (closed loop: each worker sends
// its next request when the previous one ended). Requests started before the deadline all finish
// and count; the elapsed time runs until the last one ended.
func runSlice(ctx context.Context, c *http.Client, t target, spec cellSpec, p loadParams, d time.Duration) (cellResult, error) {
	body := harness.ChatBody(t.model, spec.stream, p.maxTokens, p.seed)
	res := cellResult{spec: spec, target: t.name}
	var (
		mu sync.Mutex // guards res while workers run
		wg sync.WaitGroup
	)
	cpu0, _ := harness.ProcessCPU()
	srv0, srvOK := t.cpu()
	start := time.Now()
	deadline := start.Add(d)
	for range spec.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				r := harness.Do(ctx, c, harness.Request{URL: t.url, Body: body, Stream: spec.stream, Retryable: true})
				mu.Lock()
				if r.OK() {
					res.ok++
					res.lat = append(res.lat, r.Latency)
					if spec.stream {
						res.ttfb = append(res.ttfb, r.TTFB)
					}
				} else {
					res.failures++
					if res.firstErr == "" {
						res.firstErr = describe(r)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	if cpu1, ok := harness.ProcessCPU(); ok {
		res.cpu = cpu1 - cpu0
	}
	if srv1, ok := t.cpu(); ok && srvOK {
		res.srvCPU = srv1 - srv0
	}
	return res, ctx.Err()
}

// describe says why a request failed, in one line.
func describe(r harness.Result) string {
	switch {
	case r.Err != nil && r.Status != 0:
		return http.StatusText(r.Status) + ": " + r.Err.Error()
	case r.Err != nil:
		return r.Err.Error()
	default:
		return strings.Join(slices.DeleteFunc([]string{http.StatusText(r.Status), r.Code, r.Snippet}, func(s string) bool { return s == "" }), " ")
	}
}

// warm sends n requests of each kind to t so connection pools and caches are filled.
func warm(ctx context.Context, c *http.Client, t target, p loadParams, n int) error {
	if fails, why := warmCount(ctx, c, t, p, n, true); fails > 0 {
		return &warmError{target: t.name, why: why}
	}
	return nil
}

// warmCount sends n requests of each kind to t, JSON and streamed in turn, and counts the ones that
// failed; with stopAtFirst it ends at the first failure.
func warmCount(ctx context.Context, c *http.Client, t target, p loadParams, n int, stopAtFirst bool) (fails int, firstErr string) {
	for i := range 2 * n {
		stream := i%2 == 1
		r := harness.Do(ctx, c, harness.Request{URL: t.url, Body: harness.ChatBody(t.model, stream, p.maxTokens, p.seed), Stream: stream, Retryable: true})
		if r.OK() {
			continue
		}
		fails++
		if firstErr == "" {
			firstErr = describe(r)
		}
		if stopAtFirst {
			break
		}
	}
	return fails, firstErr
}

type warmError struct{ target, why string }

func (e *warmError) Error() string { return "warm-up request to " + e.target + " failed: " + e.why }
