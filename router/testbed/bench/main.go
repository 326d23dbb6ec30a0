// Command bench measures Llamatray's router against the same llama-server called directly:
// throughput and latency at concurrency 1, 8 and 32, streaming and not; the overhead of a cold load;
// and the catalog scan of 1,000 GGUF headers. It prints one markdown block and, with -out, writes
// docs/benchmarks.md.
//
//	go run ./router/testbed/bench -llama-server PATH [-duration 10s] [-out docs/benchmarks.md] [-cpuprofile FILE]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/llamatray/llamatray/router/cli"
	"github.com/llamatray/llamatray/router/testbed/bench/harness"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

type options struct {
	llamaServer string
	duration    time.Duration
	out         string
	cpuprofile  string
	coldRuns    int
	scanModels  int
	maxTokens   int
	keep        bool
	slices      int
	extraArgs   string
	cells       []cellSpec
	llamatray   string
	routerEnv   []string
	floor       bool
	floorRelay  bool // relay.go
	peers       bool
	draft       bool // draft.go
	workers     bool // workers.go
	fit         bool // fit.go
	llamaSwap   string
	nginx       string
	baseline    string
	swap        bool // swap.go
	swapMB      int64
	swapClients int
	swapEach    int
	swapRounds  int
	swapRooms   []int
	swapModels  string
	swapKeys    []string // more Llamatray settings
	swapSystems string   // the systems to run, by name; "" all
}

func main() {
	if len(os.Args) == 5 && os.Args[1] == floorArg && os.Args[4] == relayKind {
		if err := runRelay(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "bench: relay:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 4 && os.Args[1] == floorArg {
		if err := runBareProxy(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "bench: bare proxy:", err)
			os.Exit(1)
		}
		return
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.peers {
		os.Exit(mainPeers(ctx, o))
	}
	if o.swap {
		os.Exit(mainSwap(ctx, o))
	}
	if o.draft {
		os.Exit(mainDraft(ctx, o))
	}
	if o.workers {
		os.Exit(mainWorkers(ctx, o))
	}
	if o.fit {
		os.Exit(mainFit(ctx, o))
	}
	r, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	fmt.Print(r.markdown())
	if o.out != "" {
		if err := r.writeDoc(o.out); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "bench: wrote", o.out)
	}
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.llamaServer, "llama-server", os.Getenv("LLAMA_SERVER"), "llama-server binary (default $LLAMA_SERVER)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long each cell runs, per target")
	fs.StringVar(&o.out, "out", "", "also write the results to this markdown file (docs/benchmarks.md)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "after the measured cells, profile the router under the c=8 load for -duration into this file (streaming: -stream before the extension)")
	fs.IntVar(&o.slices, "slices", 5, "each cell runs in this many rounds of direct and router, alternating which goes first")
	fs.IntVar(&o.coldRuns, "cold-runs", 10, "cold loads measured, each way")
	fs.IntVar(&o.scanModels, "scan-models", 1000, "GGUF headers in the catalog scan")
	fs.IntVar(&o.maxTokens, "max-tokens", 8, "max_tokens of every request")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary folder (models, logs)")
	fs.StringVar(&o.extraArgs, "extra-args", "", "more llama-server arguments for both targets, space separated (e.g. \"-lv 2\")")
	fs.StringVar(&o.llamatray, "llamatray", "", "llamatray binary to measure (default: go build . into the temporary folder)")
	routerEnv := fs.String("router-env", "", "more environment for the llamatray process, space separated (e.g. \"GOMAXPROCS=1\")")
	fs.BoolVar(&o.floorRelay, "floor-relay", false, "with -floor: the floor is a hand-written HTTP/1.1 keep-alive relay (no net/http, nothing but the relaying) instead of ReverseProxy: the least a Go proxy hop costs")
	fs.BoolVar(&o.floor, "floor", false, "also measure a bare net/http ReverseProxy in its own process (with -router-env and Llamatray's GOMAXPROCS): the floor of any Go router")
	fs.BoolVar(&o.draft, "draft", false, "instead: tokens/s of one model without a draft and with two (the Draft models section of -out)")
	fs.BoolVar(&o.fit, "fit", false, "instead: the first memory estimate of eight architectures against the child's peak resident set (the Memory fit section of -out)")
	fs.BoolVar(&o.workers, "workers", false, "instead: a model split over two rpc-servers, straight and through the worker links: tokens/s, load time, the link's CPU per MB (the Workers section of -out)")
	fs.StringVar(&o.baseline, "baseline", "", "also measure this other llamatray binary (an earlier build) as a target of its own, in the same rotation")
	fs.BoolVar(&o.peers, "peers", false, "instead: Llamatray, llama.cpp's router and llama-swap side by side with room for one model (the Peers section of -out)")
	fs.StringVar(&o.llamaSwap, "llama-swap", os.Getenv("LLAMA_SWAP"), "llama-swap binary for -peers (default $LLAMA_SWAP)")
	fs.StringVar(&o.nginx, "nginx", os.Getenv("NGINX"), "nginx binary for -peers (default $NGINX, else scripts/fetch-nginx.sh's copy in the cache, else nginx on PATH)")
	fs.BoolVar(&o.swap, "swap", false, "instead: three models of real size, room for fewer, clients sending back to back, through direct spawns, llama.cpp's router, llama-swap and Llamatray: loads, time to first token, slowest request (the Swaps at real size section of -out)")
	fs.Int64Var(&o.swapMB, "swap-mb", 1500, "with -swap: the size of each model, in MiB")
	fs.IntVar(&o.swapClients, "swap-clients", 6, "with -swap: clients sending at once")
	fs.IntVar(&o.swapEach, "swap-each", 8, "with -swap: requests each client sends, one after the other")
	fs.IntVar(&o.swapRounds, "swap-rounds", 1, "with -swap: rounds, each system going first in turn")
	fs.StringVar(&o.swapModels, "swap-models", "", "with -swap: keep the models in this folder and use those already there (default: written into the temporary folder)")
	swapKeys := fs.String("swap-llamatray", "", "with -swap: more settings of Llamatray's config, `;` separated (e.g. 'fair_wait = \"2m\"; queue_timeout = \"10m\"')")
	fs.StringVar(&o.swapSystems, "swap-systems", "", "with -swap: only these systems, comma separated (direct spawns, llama.cpp router, llama-swap, Llamatray); default all")
	rooms := fs.String("swap-rooms", "1,2", "with -swap: room for this many models, each in turn (comma separated)")
	cells := fs.String("cells", "", "only these load cells, comma separated MODE/C (e.g. \"json/8,stream/8\"); default all")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	var err error
	if o.cells, err = parseCells(*cells); err != nil {
		return o, err
	}
	o.routerEnv = strings.Fields(*routerEnv)
	for _, k := range strings.Split(*swapKeys, ";") {
		if k = strings.TrimSpace(k); k != "" {
			o.swapKeys = append(o.swapKeys, k)
		}
	}
	for _, f := range strings.Split(*rooms, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 2 {
			return o, fmt.Errorf("-swap-rooms: %q is not 1 or 2", f)
		}
		o.swapRooms = append(o.swapRooms, n)
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	case o.llamaServer == "":
		return o, errors.New("no llama-server: pass -llama-server PATH or set LLAMA_SERVER (`make llama-server` prints one)")
	case o.duration <= 0:
		return o, errors.New("-duration must be positive")
	case o.coldRuns < 1 || o.scanModels < 1 || o.maxTokens < 1 || o.slices < 1:
		return o, errors.New("-cold-runs, -scan-models, -max-tokens and -slices must be at least 1")
	case o.swapMB < 1 || o.swapClients < 1 || o.swapEach < 1 || o.swapRounds < 1:
		return o, errors.New("-swap-mb, -swap-clients, -swap-each and -swap-rounds must be at least 1")
	}
	if _, err := os.Stat(o.llamaServer); err != nil {
		return o, fmt.Errorf("llama-server: %w", err)
	}
	return o, nil
}

func run(ctx context.Context, o options) (report, error) {
	r := report{duration: o.duration, coldRuns: o.coldRuns, slices: o.slices, relay: o.floor && o.floorRelay, params: loadParams{maxTokens: o.maxTokens, seed: 42}, specs: o.cells,
		cmdline: "go run ./router/testbed/bench " + homeTilde(strings.Join(os.Args[1:], " "))}
	r.machine = harness.Describe(ctx, o.llamaServer)
	r.loadAvg = append(r.loadAvg, "start "+harness.LoadAvg())
	tmp, cleanup, err := workDir("llamatray-bench-", o.keep)
	if err != nil {
		return r, err
	}
	defer cleanup()
	modelDir := filepath.Join(tmp, "models")
	if err := os.MkdirAll(modelDir, 0o755); err != nil {
		return r, err
	}
	model := filepath.Join(modelDir, "bench-64x2.gguf")
	if err := ggufwrite.WriteLlama(model, ggufwrite.LlamaOptions{Width: 64, Blocks: 2, Seed: 1, Name: "bench"}); err != nil {
		return r, err
	}
	r.modelDesc = "a 64-wide, 2-block random llama model (ctx 2048, `-t 1`)"
	extra := strings.Fields(o.extraArgs)
	args := append([]string{"-c", "2048", "-t", "1"}, extra...)
	if len(extra) > 0 {
		r.modelDesc += ", extra llama-server arguments `" + strings.Join(extra, " ") + "`"
	}

	progress("starting llama-server directly")
	direct, _, err := harness.StartDirect(ctx, o.llamaServer, model, args, filepath.Join(tmp, "direct.log"))
	if err != nil {
		return r, err
	}
	defer direct.Stop()

	bin, err := llamatrayBinary(ctx, o, tmp)
	if err != nil {
		return r, err
	}
	progress("starting Llamatray")
	pcfg := harness.ProcessConfig{ModelDir: modelDir, LlamaServer: o.llamaServer, Args: append([]string{"-t", "1"}, extra...), Env: o.routerEnv}
	if o.cpuprofile != "" {
		pcfg.Env = append(pcfg.Env, "LLAMATRAY_CPUPROFILE="+o.cpuprofile)
		r.profiles = append(r.profiles, o.cpuprofile)
	}
	svc, err := harness.StartProcess(ctx, bin, pcfg, tmp)
	if err != nil {
		return r, err
	}
	defer svc.Stop()
	if len(o.routerEnv) > 0 {
		r.modelDesc += ", Llamatray's environment `" + strings.Join(o.routerEnv, " ") + "`"
	}
	id, err := svc.ModelID(ctx, model)
	if err != nil {
		return r, err
	}
	if err := svc.Load(ctx, id); err != nil {
		return r, fmt.Errorf("preloading %s: %w", id, err)
	}

	client := harness.NewClient(64)
	targets := []target{
		{name: "direct", url: direct.URL + "/v1/chat/completions", model: id, cpu: direct.CPU},
		{name: "router", url: svc.ChatURL(), model: id, cpu: svc.CPU},
	}
	if o.floor {
		fl, err := startFloor(ctx, direct.URL, o.floorRelay, append([]string{fmt.Sprintf("GOMAXPROCS=%d", cli.RouterProcs(runtime.NumCPU()))}, o.routerEnv...))
		if err != nil {
			return r, err
		}
		defer fl.stop()
		targets = append(targets, target{name: "floor", url: fl.url + "/v1/chat/completions", model: id, cpu: fl.cpu})
	}
	stopBaseline := func() {}
	if o.baseline != "" {
		bt, stop, err := startBaseline(ctx, o.baseline, pcfg, model, tmp)
		if err != nil {
			return r, err
		}
		defer stop()
		stopBaseline = stop
		targets = append(targets, bt)
	}
	for _, t := range targets {
		// The bare proxy answers 502 when it reuses a connection llama-server closed after a stream
		// (one of the things Llamatray does more): its failures are counted, not fatal.
		if err := warm(ctx, client, t, r.params, 20); err != nil && t.name != "floor" {
			return r, err
		}
	}
	for _, spec := range o.cells {
		progress(fmt.Sprintf("%s c=%d (load %s)", spec.mode(), spec.concurrency, harness.LoadAvg()))
		cells, err := runCell(ctx, client, targets, spec, r.params, o.duration, o.slices)
		if err != nil {
			return r, err
		}
		r.cells = append(r.cells, cells...)
	}
	r.loadAvg = append(r.loadAvg, "after the load cells "+harness.LoadAvg())
	if exited, err := direct.Exited(); exited {
		return r, fmt.Errorf("the direct llama-server exited during the run: %v", err)
	}
	direct.Stop() // idle, but one process less while measuring cold loads
	stopBaseline()

	progress("cold loads")
	r.cold, err = measureCold(ctx, client, svc, o.llamaServer, model, id, args, tmp, o.coldRuns)
	if err != nil {
		return r, err
	}
	r.loadAvg = append(r.loadAvg, "after the cold loads "+harness.LoadAvg())
	svc.Stop() // writes the CPU profile

	progress("catalog scan")
	r.scan, err = measureScan(ctx, filepath.Join(tmp, "scan"), o.scanModels, 3, 5)
	if err != nil {
		return r, err
	}
	r.loadAvg = append(r.loadAvg, "end "+harness.LoadAvg())
	for _, p := range r.profiles {
		fmt.Fprintln(os.Stderr, "bench: CPU profile", p)
	}
	return r, nil
}

// mainPeers runs -peers and returns the exit code.
func mainPeers(ctx context.Context, o options) int {
	r, err := runPeers(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	fmt.Print(r.markdown())
	if o.out != "" {
		if err := r.writeDoc(o.out); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "bench: wrote", o.out)
	}
	return 0
}

// workDir makes the run's temporary folder and points the XDG folders into it; cleanup removes it
// unless keep.
func workDir(prefix string, keep bool) (dir string, cleanup func(), err error) {
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	if keep {
		fmt.Fprintln(os.Stderr, "bench: keeping", dir)
		cleanup = func() {}
	}
	if err := harness.IsolateXDG(dir); err != nil {
		cleanup()
		return "", nil, err
	}
	return dir, cleanup, nil
}

// llamatrayBinary is -llamatray, or Llamatray built into tmp.
func llamatrayBinary(ctx context.Context, o options, tmp string) (string, error) {
	if o.llamatray != "" {
		return o.llamatray, nil
	}
	progress("building llamatray")
	bin := filepath.Join(tmp, "llamatray")
	return bin, harness.BuildLlamatray(ctx, bin)
}

func progress(msg string) { fmt.Fprintln(os.Stderr, "bench:", msg) }

// homeTilde writes the home folder as ~ so the command in the docs is not one user's.
func homeTilde(s string) string {
	if home, err := os.UserHomeDir(); err == nil && home != "" && home != "/" {
		return strings.ReplaceAll(s, home+"/", "~/")
	}
	return s
}
