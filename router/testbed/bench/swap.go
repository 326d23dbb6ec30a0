package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/testbed/bench/harness"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// The swap run (-swap): three models of real size, room for fewer, and clients sending requests
// back to back for a model each picks at random (the same picks for every system). What it
// measures is what swapping costs the clients: loads made, total time, time to first token, the
// slowest request; beside the floor, the time to read a model's weights from the page cache.

// swapSystem is one way to serve the workload: a router started with room for room models, or the
// bench's own spawner. stop ends it; pid is the process whose children are the loads (0: count).
type swapSystem struct {
	name  string
	note  string
	base  string
	model func(file string) string
	pid   int
	loads func() int // the spawner counts its own loads
	do    func(ctx context.Context, c *http.Client, url string, body []byte) harness.Result
	stop  func()
}

// swapResult is one system's run of the workload with room for room models.
type swapResult struct {
	name, note  string
	room, round int
	loads       int
	total       time.Duration
	ttft, lat   []time.Duration
	fails       int
	firstErr    string
}

type swapReport struct {
	machine       harness.Machine
	cmdline       string
	loadAvg       []string
	size          int64 // bytes of each model file
	desc          string
	floor         time.Duration // reading one model file from the page cache, median
	byHand        time.Duration // llama-server started by hand to its first token, median
	clients, each int
	fewest        map[int]int // room: the fewest loads any scheduler can make for the workload's picks (fewestLoads)
	results       []swapResult
}

func runSwap(ctx context.Context, o options) (swapReport, error) {
	r := swapReport{clients: o.swapClients, each: o.swapEach, fewest: map[int]int{}, cmdline: "go run ./router/testbed/bench " + homeTilde(strings.Join(os.Args[1:], " "))}
	if o.llamaSwap == "" {
		return r, errNoSwap
	}
	r.cmdline = strings.ReplaceAll(r.cmdline, "-llama-swap "+homeTilde(o.llamaSwap), "-llama-swap $LLAMA_SWAP")
	r.machine = harness.Describe(ctx, o.llamaServer)
	r.loadAvg = append(r.loadAvg, "start "+harness.LoadAvg())
	tmp, cleanup, err := workDir("llamatray-swap-", o.keep)
	if err != nil {
		return r, err
	}
	defer cleanup()
	f := peerFiles{dir: filepath.Join(tmp, "models"), keys: o.swapKeys}
	if o.swapModels != "" {
		f.dir = o.swapModels // kept between runs: writing 3 GB of random weights takes minutes
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return r, err
	}
	// f32 weights: a block of width w holds 16·w² floats (attention 4·w², feed-forward 3·w·4w).
	const width = 1024
	blocks := max(1, int(o.swapMB<<20/(16*width*width*4)))
	for i, p := range []*string{&f.a, &f.b, &f.c} {
		name := fmt.Sprintf("swap-%c", 'a'+i)
		*p = filepath.Join(f.dir, name+".gguf")
		if _, err := os.Stat(*p); err == nil && o.swapModels != "" {
			continue
		}
		progress("writing " + *p)
		if err := ggufwrite.WriteLlama(*p, ggufwrite.LlamaOptions{Width: width, Blocks: blocks, Seed: int64(i + 1), Name: name}); err != nil {
			return r, err
		}
	}
	st, err := os.Stat(f.a)
	if err != nil {
		return r, err
	}
	r.size = st.Size()
	r.desc = fmt.Sprintf("three random llama models of %.2f GB each (%d-wide, %d blocks, f32), ctx 2048, `-t 1`, streamed requests of %d tokens", float64(r.size)/1e9, width, blocks, o.maxTokens)
	for _, room := range o.swapRooms {
		r.fewest[room] = fewestLoads(swapPicks(o.swapClients, o.swapEach, len(f.files())), len(f.files()), room)
	}
	if r.floor, err = cacheRead(f.files()); err != nil {
		return r, err
	}
	client := harness.NewClient(64)
	params := loadParams{maxTokens: o.maxTokens, seed: 42}
	if r.byHand, err = loadByHand(ctx, client, o.llamaServer, f.files(), params, tmp); err != nil {
		return r, err
	}
	bin, err := llamatrayBinary(ctx, o, tmp)
	if err != nil {
		return r, err
	}
	// The router this is measured against first, the slow serial spawner last.
	starts := []func(room int) (*swapSystem, error){
		func(room int) (*swapSystem, error) {
			g := f
			g.room = room
			return fromPeer(startLlamaCppRouter(ctx, o.llamaServer, g, tmp))
		},
		func(room int) (*swapSystem, error) {
			g := f
			g.room = room
			return fromPeer(startLlamatrayPeer(ctx, bin, o.llamaServer, g, tmp))
		},
		func(room int) (*swapSystem, error) {
			g := f
			g.room = room
			return fromPeer(startLlamaSwap(ctx, o.llamaSwap, o.llamaServer, g, tmp))
		},
		func(room int) (*swapSystem, error) { return startSpawner(o.llamaServer, room, tmp), nil },
	}
	for round := range o.swapRounds {
		for _, room := range o.swapRooms {
			for k := range starts {
				start := starts[(k+round)%len(starts)] // alternating rounds: each system goes first once
				sys, err := start(room)
				if err != nil {
					return r, err
				}
				if o.swapSystems != "" && !slices.Contains(strings.Split(o.swapSystems, ","), sys.name) {
					sys.stop()
					continue
				}
				progress(fmt.Sprintf("swap workload: %s, room for %d, round %d (load %s)", sys.name, room, round+1, harness.LoadAvg()))
				res := runSwapWorkload(ctx, client, sys, f, params, o.swapClients, o.swapEach)
				sys.stop()
				res.room, res.round = room, round+1
				r.results = append(r.results, res)
				r.loadAvg = append(r.loadAvg[:1], "now "+harness.LoadAvg())
				if err := r.write(o.out); err != nil { // what is measured so far is kept, should a later run not finish
					return r, err
				}
			}
		}
	}
	r.loadAvg = append(r.loadAvg[:1], "end "+harness.LoadAvg())
	return r, nil
}

// fromPeer is a started router as a system of the swap run.
func fromPeer(p *peer, err error) (*swapSystem, error) {
	if err != nil {
		return nil, err
	}
	return &swapSystem{name: p.name, note: p.note, base: p.base, model: p.model, pid: p.pid, stop: p.stop}, nil
}

// runSwapWorkload has clients send each streamed request one after the other, each for one of the
// three models at random (seeded per client), and counts the loads sys made meanwhile: the
// llama-server processes that came to exist under its process, seen every 20 ms (a load takes
// seconds), or the spawner's own count.
func runSwapWorkload(ctx context.Context, c *http.Client, sys *swapSystem, f peerFiles, params loadParams, clients, each int) swapResult {
	res := swapResult{name: sys.name, note: sys.note}
	seen := map[int]bool{}
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if sys.pid > 0 {
				for _, pid := range harness.ChildrenOf(sys.pid) {
					seen[pid] = true
				}
			}
			select {
			case <-stopWatch:
				return
			case <-t.C:
			}
		}
	}()
	files := f.files()
	picks := swapPicks(clients, each, len(files))
	var (
		mu sync.Mutex // guards res's lists, fails and firstErr
		wg sync.WaitGroup
	)
	start := time.Now()
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, k := range picks[w] {
				file := files[k]
				sent := time.Now()
				body := harness.ChatBody(sys.model(file), true, params.maxTokens, params.seed)
				var r harness.Result
				if sys.do != nil {
					r = sys.do(ctx, c, file, body)
				} else {
					r = harness.Do(ctx, c, harness.Request{URL: sys.base + "/v1/chat/completions", Body: body, Stream: true, Retryable: true})
				}
				mu.Lock()
				if r.OK() {
					res.ttft = append(res.ttft, r.Start.Sub(sent)+r.FirstData)
					res.lat = append(res.lat, r.End.Sub(sent))
				} else {
					res.fails++
					if res.firstErr == "" {
						res.firstErr = describe(r)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.total = time.Since(start)
	close(stopWatch)
	<-watched
	res.loads = len(seen)
	if sys.loads != nil {
		res.loads = sys.loads()
	}
	return res
}

// spawner is the bench starting llama-server itself, one request at a time: a load whenever the
// model asked for is not running, the least recently used one stopped when room is full. What a
// script that spawns by hand does; no router.
type spawner struct {
	bin  string
	room int
	tmp  string
	mu   sync.Mutex // held through each request: guards running, order and loads
	run  map[string]*harness.Direct
	lru  []string // running files, least recently used first
	made int
}

func startSpawner(bin string, room int, tmp string) *swapSystem {
	s := &spawner{bin: bin, room: max(room, 1), tmp: tmp, run: map[string]*harness.Direct{}}
	return &swapSystem{name: "direct spawns", note: fmt.Sprintf("the bench runs `llama-server -m FILE -c 2048 -t 1` itself, one request at a time, room for %d", s.room),
		model: func(string) string { return "any" }, loads: func() int { return s.made }, do: s.do, stop: s.stopAll}
}

func (s *spawner) do(ctx context.Context, c *http.Client, file string, body []byte) harness.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.run[file]
	if d == nil {
		if len(s.lru) >= s.room {
			s.run[s.lru[0]].Stop()
			delete(s.run, s.lru[0])
			s.lru = s.lru[1:]
		}
		var err error
		d, _, err = harness.StartDirect(ctx, s.bin, file, []string{"-c", "2048", "-t", "1"}, filepath.Join(s.tmp, "spawn.log"))
		if err != nil {
			return harness.Result{Start: time.Now(), End: time.Now(), Err: err}
		}
		s.made++
		s.run[file] = d
	}
	s.lru = append(slices.DeleteFunc(s.lru, func(f string) bool { return f == file }), file)
	return harness.Do(ctx, c, harness.Request{URL: d.URL + "/v1/chat/completions", Body: body, Stream: true, Retryable: true})
}

func (s *spawner) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.run {
		d.Stop()
	}
	clear(s.run)
	s.lru = nil
}

// cacheRead is the floor of a load: the median time to read one model file that is in the page
// cache (each is read once to bring it in, then timed).
func cacheRead(files []string) (time.Duration, error) {
	var ds []time.Duration
	for pass := range 2 {
		for _, p := range files {
			start := time.Now()
			fh, err := os.Open(p)
			if err != nil {
				return 0, err
			}
			_, err = io.Copy(io.Discard, fh)
			fh.Close()
			if err != nil {
				return 0, fmt.Errorf("reading %s: %w", p, err)
			}
			if pass == 1 {
				ds = append(ds, time.Since(start))
			}
		}
	}
	return harness.Median(ds), nil
}

// loadByHand is the median over files of llama-server started by hand, from its spawn to the first
// token of one streamed request.
func loadByHand(ctx context.Context, c *http.Client, bin string, files []string, params loadParams, tmp string) (time.Duration, error) {
	var ds []time.Duration
	for _, file := range files {
		start := time.Now()
		d, _, err := harness.StartDirect(ctx, bin, file, []string{"-c", "2048", "-t", "1"}, filepath.Join(tmp, "byhand.log"))
		if err != nil {
			return 0, err
		}
		r := harness.Do(ctx, c, harness.Request{URL: d.URL + "/v1/chat/completions", Body: harness.ChatBody("any", true, params.maxTokens, params.seed), Stream: true})
		d.Stop()
		if !r.OK() {
			return 0, fmt.Errorf("llama-server -m %s: %s", file, describe(r))
		}
		ds = append(ds, r.Start.Sub(start)+r.FirstData)
	}
	return harness.Median(ds), nil
}
