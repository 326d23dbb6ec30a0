package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/testbed/bench/harness"
)

// peerResult is what one router did in the side-by-side run.
type peerResult struct {
	name, note   string
	front        bool // nginx: in front of the direct llama-server, the load cells only
	json8, json1 cellResult
	rss          int64
	swaps        []time.Duration // each request of an A, B, A, B … sequence, every one a swap
	swapFails    int
	swapErr      string
	warmFails    int // of the 40 warm-up requests (20 JSON, 20 streamed) to the model loaded first
	warmErr      string
	mixedOK      int
	mixedFails   int
	mixedWall    time.Duration
	mixedErr     string
	survival     survival
}

// survival is the long-stream check: a stream on one model, a request for another while it runs.
type survival struct {
	survived bool   // the stream ended with finish_reason "length" (every token asked for) and data: [DONE]
	events   int    // data lines the stream carried
	why      string // how it ended, when it did not survive
	other    string // what the request for the other model got
}

// peerReport is the whole side-by-side run.
type peerReport struct {
	machine          harness.Machine
	cmdline          string
	loadAvg          []string
	duration         time.Duration
	slices           int
	direct8, direct1 cellResult
	peers            []peerResult
	swapRounds       int
	mixedClients     int
	mixedEach        int
	longTokens       int
}

func runPeers(ctx context.Context, o options) (peerReport, error) {
	r := peerReport{duration: o.duration, slices: o.slices, swapRounds: 10, mixedClients: 6, mixedEach: 10,
		cmdline: "go run ./router/testbed/bench " + homeTilde(strings.Join(os.Args[1:], " "))}
	if o.llamaSwap == "" {
		return r, errNoSwap
	}
	nginx, err := findNginx(o.nginx)
	if err != nil {
		return r, err
	}
	// The command in the docs names no one machine's paths (cmdline has the home folder as ~ already).
	r.cmdline = strings.ReplaceAll(r.cmdline, "-llama-swap "+homeTilde(o.llamaSwap), "-llama-swap $LLAMA_SWAP")
	if o.nginx != "" {
		r.cmdline = strings.ReplaceAll(r.cmdline, "-nginx "+homeTilde(o.nginx), "-nginx $NGINX")
	}
	r.machine = harness.Describe(ctx, o.llamaServer)
	r.loadAvg = append(r.loadAvg, "start "+harness.LoadAvg())
	tmp, cleanup, err := workDir("llamatray-peers-", o.keep)
	if err != nil {
		return r, err
	}
	defer cleanup()
	f, err := writePeerModels(filepath.Join(tmp, "models"))
	if err != nil {
		return r, err
	}
	r.longTokens = f.longTokens
	progress("starting llama-server directly")
	direct, _, err := harness.StartDirect(ctx, o.llamaServer, f.a, []string{"-c", "2048", "-t", "1"}, filepath.Join(tmp, "direct.log"))
	if err != nil {
		return r, err
	}
	defer direct.Stop()
	bin, err := llamatrayBinary(ctx, o, tmp)
	if err != nil {
		return r, err
	}
	var peers []*peer
	defer func() {
		for _, p := range peers {
			p.stop()
		}
	}()
	for _, start := range []func() (*peer, error){
		func() (*peer, error) { return startNginx(ctx, nginx, direct.URL, "bench", tmp) },
		func() (*peer, error) { return startLlamatrayPeer(ctx, bin, o.llamaServer, f, tmp) },
		func() (*peer, error) { return startLlamaCppRouter(ctx, o.llamaServer, f, tmp) },
		func() (*peer, error) { return startLlamaSwap(ctx, o.llamaSwap, o.llamaServer, f, tmp) },
	} {
		p, err := start()
		if err != nil {
			return r, err
		}
		progress("started " + p.name)
		peers = append(peers, p)
	}

	client := harness.NewClient(64)
	params := loadParams{maxTokens: o.maxTokens, seed: 42}
	targets := []target{{name: "direct", url: direct.URL + "/v1/chat/completions", model: "bench", cpu: direct.CPU}}
	for _, p := range peers {
		targets = append(targets, target{name: p.name, url: p.base + "/v1/chat/completions", model: p.model(f.a), cpu: p.cpu})
	}
	res := make([]peerResult, len(peers))
	for i, p := range peers {
		res[i].name, res[i].note, res[i].front = p.name, p.note, p.front
	}
	// A router's failed warm-up requests are counted, not fatal: what it answers is what is measured.
	if err := warm(ctx, client, targets[0], params, 20); err != nil {
		return r, err
	}
	for i, t := range targets[1:] {
		res[i].warmFails, res[i].warmErr = warmCount(ctx, client, t, params, 20, false)
	}
	for _, c := range []int{8, 1} {
		spec := cellSpec{concurrency: c}
		progress(fmt.Sprintf("json c=%d (load %s)", c, harness.LoadAvg()))
		cells, err := runCell(ctx, client, targets, spec, params, o.duration, o.slices)
		if err != nil {
			return r, err
		}
		for i := range peers {
			if c == 8 {
				res[i].json8 = cells[i+1]
			} else {
				res[i].json1 = cells[i+1]
			}
		}
		if c == 8 {
			r.direct8 = cells[0]
		} else {
			r.direct1 = cells[0]
		}
	}
	for i, p := range peers {
		res[i].rss, _ = harness.RSS(p.pid)
	}
	r.loadAvg = append(r.loadAvg, "after the load cells "+harness.LoadAvg())
	for _, p := range peers {
		if p.front {
			p.stop()
		}
	}
	direct.Stop()

	for i, p := range peers {
		if p.front {
			continue
		}
		progress("swaps, mixed run and long stream: " + p.name)
		res[i].swaps, res[i].swapFails, res[i].swapErr = measureSwaps(ctx, client, p, f, params, r.swapRounds)
		res[i].mixedOK, res[i].mixedFails, res[i].mixedWall, res[i].mixedErr = measureMixed(ctx, client, p, f, params, r.mixedClients, r.mixedEach)
		res[i].survival = measureSurvival(ctx, client, p, f, params)
	}
	r.loadAvg = append(r.loadAvg, "end "+harness.LoadAvg())
	r.peers = res
	return r, nil
}

// measureSwaps sends rounds pairs of requests, B then A, one at a time, with room for one model:
// each request swaps the other model out.
func measureSwaps(ctx context.Context, c *http.Client, p *peer, f peerFiles, params loadParams, rounds int) (lat []time.Duration, fails int, firstErr string) {
	for i := range 2 * rounds {
		file := f.b
		if i%2 == 1 {
			file = f.a
		}
		r := harness.Do(ctx, c, harness.Request{URL: p.base + "/v1/chat/completions", Body: harness.ChatBody(p.model(file), false, params.maxTokens, params.seed), Retryable: true})
		if !r.OK() {
			fails++
			if firstErr == "" {
				firstErr = describe(r)
			}
			continue
		}
		lat = append(lat, r.Latency)
	}
	return lat, fails, firstErr
}

// measureMixed runs clients workers, each sending each requests for a model picked at random among
// three (the same picks for every router), with room for one.
func measureMixed(ctx context.Context, c *http.Client, p *peer, f peerFiles, params loadParams, clients, each int) (ok, fails int, wall time.Duration, firstErr string) {
	files := []string{f.a, f.b, f.c}
	var (
		mu sync.Mutex // guards ok, fails and firstErr
		wg sync.WaitGroup
	)
	start := time.Now()
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(42, uint64(w)))
			for range each {
				file := files[rng.IntN(len(files))]
				r := harness.Do(ctx, c, harness.Request{URL: p.base + "/v1/chat/completions", Body: harness.ChatBody(p.model(file), false, params.maxTokens, params.seed), Retryable: true})
				mu.Lock()
				if r.OK() {
					ok++
				} else {
					fails++
					if firstErr == "" {
						firstErr = describe(r)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ok, fails, time.Since(start), firstErr
}

// measureSurvival starts a long stream on the long model and, once its first token came, asks for
// another model (room for one). The stream survives when it ends with data: [DONE] after its
// finish_reason "length": every token asked for came.
func measureSurvival(ctx context.Context, c *http.Client, p *peer, f peerFiles, params loadParams) survival {
	var s survival
	body, _ := json.Marshal(map[string]any{
		"model": p.model(f.long), "stream": true, "max_tokens": f.longTokens, "ignore_eos": true, "seed": params.seed,
		"messages": []map[string]string{{"role": "user", "content": harness.Prompt}},
	})
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		s.why = err.Error()
		return s
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		s.why = err.Error()
		return s
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.why = fmt.Sprintf("status %d", resp.StatusCode)
		return s
	}
	other := make(chan harness.Result, 1)
	sent := false
	done, length := false, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		if line == "data: [DONE]" {
			done = true
			break
		}
		s.events++
		length = length || strings.Contains(line, `"finish_reason":"length"`)
		if !sent {
			sent = true
			go func() {
				other <- harness.Do(ctx, c, harness.Request{URL: p.base + "/v1/chat/completions", Body: harness.ChatBody(p.model(f.a), false, params.maxTokens, params.seed), Retryable: true})
			}()
		}
	}
	switch {
	case sc.Err() != nil:
		s.why = "cut: " + sc.Err().Error()
	case !done:
		s.why = fmt.Sprintf("ended without [DONE] after %d events", s.events)
	case !length:
		s.why = fmt.Sprintf("[DONE] after %d events without finish_reason \"length\"", s.events)
	default:
		s.survived = true
	}
	if sent {
		r := <-other
		if r.OK() {
			s.other = fmt.Sprintf("200 after %s", r.Latency.Round(time.Millisecond))
		} else {
			s.other = describe(r)
		}
	}
	return s
}

// median of ds, 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
