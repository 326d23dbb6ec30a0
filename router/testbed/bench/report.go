package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/testbed/bench/harness"
)

// report is everything one bench run measured.
type report struct {
	machine   harness.Machine
	duration  time.Duration
	params    loadParams
	specs     []cellSpec   // the cells that ran, in report order
	cells     []cellResult // direct and router results, in run order
	cold      coldResult
	scan      scanResult
	loadAvg   []string // "phase: 1m 5m 15m"
	profiles  []string
	coldRuns  int
	slices    int
	cmdline   string
	modelDesc string
	relay     bool // the floor was the hand-written relay (-floor-relay)
}

// pair finds the direct and router results of one cell.
func (r report) pair(spec cellSpec) (direct, router cellResult) {
	return r.result(spec, "direct"), r.result(spec, "router")
}

// result finds one target's result of one cell (zero when it did not run).
func (r report) result(spec cellSpec, target string) cellResult {
	for _, c := range r.cells {
		if c.spec == spec && c.target == target {
			return c
		}
	}
	return cellResult{}
}

// hasFloor reports whether the bare proxy was measured.
func (r report) hasFloor() bool {
	for _, c := range r.cells {
		if c.target == "floor" {
			return true
		}
	}
	return false
}

// ratioOf is a's throughput over b's, 0 when b has none.
func ratioOf(a, b cellResult) float64 {
	if b.rps() <= 0 {
		return 0
	}
	return a.rps() / b.rps()
}

// check is one target with its verdict.
type check struct {
	name string
	got  string
	pass bool
}

func (r report) checks() []check {
	var out []check
	for _, stream := range []bool{false, true} {
		spec := cellSpec{stream: stream, concurrency: 8}
		if d, rt := r.pair(spec); d.ok > 0 && rt.ok > 0 {
			ratio := rt.rps() / d.rps()
			out = append(out, check{fmt.Sprintf("throughput at c=8 (%s) ≥ 0.97× direct", spec.mode()), fmt.Sprintf("%.3f×", ratio), ratio >= 0.97})
			if !stream && rt.srvCPU > 0 {
				cpu := rt.serverCPUPerRequest()
				out = append(out, check{"router CPU at c=8 (json) ≤ 150 µs per request", fmt.Sprintf("%.0f µs", us(cpu)), cpu <= 150*time.Microsecond})
			}
		}
		spec.concurrency = 1
		if d, rt := r.pair(spec); d.ok > 0 && rt.ok > 0 {
			added := harness.Median(rt.lat) - harness.Median(d.lat)
			out = append(out, check{fmt.Sprintf("p50 latency at c=1 (%s) ≤ +0.15 ms", spec.mode()), fmt.Sprintf("%+.2f ms", ms(added)), added <= 150*time.Microsecond})
		}
	}
	oh := r.cold.overhead()
	out = append(out, check{"cold-load overhead ≤ 50 ms", fmt.Sprintf("%+.1f ms", ms(oh)), oh <= 50*time.Millisecond})
	fails := 0
	for _, c := range r.cells {
		fails += c.failures
	}
	out = append(out, check{"0 failures", fmt.Sprintf("%d", fails), fails == 0})
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// markdown renders the results block printed to stdout and written into docs/benchmarks.md.
func (r report) markdown() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("Each cell ran %s per target, in %d rounds with the targets in rotating order; %s.\n\n", r.duration, r.slices, r.modelDesc)
	w("| mode | c | target | req/s | p50 ms | p99 ms | first byte p50 ms | failures |\n")
	w("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n")
	specs := r.specs
	for _, spec := range specs {
		for _, c := range r.cells {
			if c.spec != spec {
				continue
			}
			ttfb := "–"
			if spec.stream {
				ttfb = harness.Ms(harness.Median(c.ttfb))
			}
			w("| %s | %d | %s | %.1f | %s | %s | %s | %d |\n", spec.mode(), spec.concurrency, c.target, c.rps(),
				harness.Ms(harness.Median(c.lat)), harness.Ms(harness.Percentile(c.lat, 99)), ttfb, c.failures)
		}
	}
	w("\n| mode | c | throughput router/direct | added p50 ms | added first-byte p50 ms | llama-server CPU µs/request (direct) | Llamatray CPU µs/request |\n")
	w("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, spec := range specs {
		d, rt := r.pair(spec)
		ratio := 0.0
		if d.rps() > 0 {
			ratio = rt.rps() / d.rps()
		}
		ttfb := "–"
		if spec.stream {
			ttfb = fmt.Sprintf("%+.2f", ms(harness.Median(rt.ttfb)-harness.Median(d.ttfb)))
		}
		w("| %s | %d | %.3f× | %+.2f | %s | %.0f | %.0f |\n", spec.mode(), spec.concurrency, ratio, ms(harness.Median(rt.lat)-harness.Median(d.lat)), ttfb,
			us(d.serverCPUPerRequest()), us(rt.serverCPUPerRequest()))
	}
	w("\nCPU per request = the server process's CPU time (user + system, from /proc) during its rounds, per\n")
	w("complete answer: llama-server's when called directly; Llamatray's own (not its llama-server's) when\n")
	w("called through it.\n")
	if r.hasFloor() {
		if r.relay {
			w("\nFloor: a hand-written HTTP/1.1 keep-alive relay (bufio and sockets, no net/http; nothing but the\n")
			w("relaying), in its own process with Llamatray's GOMAXPROCS, in front of the same llama-server\n")
			w("(`-floor -floor-relay`).\n\n")
		} else {
			w("\nFloor: Go's `httputil.ReverseProxy` with its defaults and nothing else, in its own process with\n")
			w("Llamatray's GOMAXPROCS, in front of the same llama-server (`-floor`).\n\n")
		}
		w("| mode | c | throughput floor/direct | router/floor | added p50 ms (floor) | floor CPU µs/request |\n")
		w("| --- | ---: | ---: | ---: | ---: | ---: |\n")
		for _, spec := range specs {
			d, rt := r.pair(spec)
			f := r.result(spec, "floor")
			w("| %s | %d | %.3f× | %.3f× | %+.2f | %.0f |\n", spec.mode(), spec.concurrency, ratioOf(f, d), ratioOf(rt, f),
				ms(harness.Median(f.lat)-harness.Median(d.lat)), us(f.serverCPUPerRequest()))
		}
	}
	w("%s", r.baselineMarkdown(specs))
	w("\n| cold load (median of %d) | ms |\n| --- | ---: |\n", r.coldRuns)
	w("| direct: spawn → first /health 200 | %s |\n", harness.Ms(harness.Median(r.cold.direct)))
	w("| Llamatray: request for an unloaded model → first byte | %s |\n", harness.Ms(harness.Median(r.cold.router)))
	w("| overhead | %+.1f |\n", ms(r.cold.overhead()))
	w("\n| catalog scan of %d GGUF headers | median ms | runs |\n| --- | ---: | ---: |\n", r.scan.models)
	w("| cold (new catalog) | %s | %d |\n", harness.Ms(r.scan.coldMedian()), len(r.scan.cold))
	w("| warm rescan (unchanged) | %s | %d |\n", harness.Ms(r.scan.warmMedian()), len(r.scan.warm))
	w("\n| target | measured | verdict |\n| --- | ---: | --- |\n")
	for _, c := range r.checks() {
		verdict := "PASS"
		if !c.pass {
			verdict = "MISS"
		}
		w("| %s | %s | %s |\n", c.name, c.got, verdict)
	}
	w("\nLoad average (1, 5, 15 min): %s.\n", strings.Join(r.loadAvg, "; "))
	for _, c := range r.cells {
		if c.firstErr != "" {
			w("\nFirst failure of %s %s c=%d: `%s`\n", c.target, c.spec.mode(), c.spec.concurrency, c.firstErr)
		}
	}
	return b.String()
}

// writeDoc writes docs/benchmarks.md: how to reproduce, the machine, and the results block.
func (r report) writeDoc(path string) error {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Benchmarks\n\n")
	w("Llamatray's HTTP router in front of a real llama-server, compared with the same llama-server\n")
	w("started by hand and called directly. Both serve the same tiny random-weight model (so the\n")
	w("router's own cost is not hidden behind a long generation), with the same flags, requests and seed.\n\n")
	w("## How to reproduce\n\n")
	w("```sh\nmake bench            # fetches llama-server, builds llamatray, then runs the command below\n")
	w("go run ./router/testbed/bench -llama-server \"$(bash scripts/fetch-llama-server.sh)\" -llamatray ./llamatray -duration 10s -out docs/benchmarks.md\n```\n\n")
	w("Flags: `-duration` per cell and target, `-slices` (5 alternating rounds per cell), `-cold-runs` (10),\n")
	w("`-scan-models` (1000), `-max-tokens` (8), `-cells` (only some cells, e.g. `json/8,stream/8`),\n")
	w("`-llamatray PATH` (default: `go build .` into a temporary folder), `-router-env` (more environment for the\n")
	w("Llamatray process), `-extra-args` (more llama-server arguments for both targets), `-cpuprofile FILE`\n")
	w("(Llamatray writes a CPU profile of its whole run there, through `LLAMATRAY_CPUPROFILE`:\n")
	w("`go tool pprof -top FILE`), `-floor` (a bare `httputil.ReverseProxy` as a third target; with `-floor-relay`\n")
	w("a hand-written HTTP/1.1 relay instead, no net/http: the least a Go proxy hop costs), `-baseline PATH`\n")
	w("(another llamatray binary, an earlier build, as one more target in the same rotation), `-peers` with\n")
	w("`-llama-swap PATH` and `-nginx PATH` (instead: the Peers section below, `make bench-peers`).\n\n")
	w("What runs:\n\n")
	w("- A 64-wide, 2-block llama model written by `router/testbed/ggufwrite`.\n")
	w("- **direct**: `llama-server -m MODEL -c 2048 -t 1 --host 127.0.0.1 --port P`, ready when `/health` answers 200.\n")
	w("- **router**: `llamatray serve` as its own process, as users run it: model folder = that one model,\n")
	w("  `ctx_size = 2048`, `args = [\"-t\", \"1\"]`, no idle sleep, `log_level = \"warn\"`; the model is loaded\n")
	w("  through its management API before measuring.\n")
	w("- Each cell runs in rounds: direct then router, router then direct, and so on, so a load spike from\n")
	w("  other work on the machine hits both targets alike.\n")
	w("- Load: closed loop, `c` concurrent clients sharing one `http.Client`, each sending its next\n")
	w("  `POST /v1/chat/completions` (`max_tokens` %d, seed %d, a one-line prompt) when the last one ended;\n", r.params.maxTokens, r.params.seed)
	w("  `json` = `stream: false`, `stream` = `stream: true` (first byte = first SSE line). A failure is any\n")
	w("  answer other than a 200 with a finished choice or `data: [DONE]`. Requests carry an `Idempotency-Key`\n")
	w("  header, so Go's client resends a request once when a kept-alive connection turns out closed before\n")
	w("  any answer byte (llama-server closes the connection after every stream), as SDK clients do.\n")
	w("- Cold load: a streamed request (`max_tokens` 1) for an unloaded model through Llamatray, time to the\n")
	w("  first byte of the answer, against spawning llama-server by hand until its first `/health` 200; the\n")
	w("  model is unloaded through the management API between runs; runs are interleaved.\n")
	w("- Catalog scan: sparse header-only GGUF files in 10 folders; cold = a new `catalog.Catalog` each time,\n")
	w("  warm = rescanning the unchanged tree. The files stay in the page cache.\n\n")
	w("## Machine\n\n%s.\n\nCommand: `%s`\n\n", r.machine, r.cmdline)
	w("The machine is shared: read the load averages below before the numbers. On two cores with a load\n")
	w("average above the core count, the client, the router and llama-server compete for the same CPUs, so\n")
	w("small differences (a few percent of throughput, a fraction of a millisecond) are within the noise.\n\n")
	w("The model is tiny on purpose, which makes this the router's worst case: llama-server spends only a\n")
	w("millisecond or two of CPU on such a request, so the router's own CPU per request (a second HTTP hop,\n")
	w("and for a stream a new connection to llama-server, which closes it after every stream) is a visible\n")
	w("fraction of it, and when every core is busy it comes out of llama-server's share. With a real model\n")
	w("every token costs llama-server milliseconds to tens of milliseconds and the same router cost\n")
	w("disappears in it. The analysis at the end (kept across runs) says where the router's time goes.\n\n")
	w("## Results\n\n%s", r.markdown())
	w("%s", keptAnalysis(path))
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// analysisHeading starts the hand-written part of docs/benchmarks.md, which a new run keeps.
const analysisHeading = "\n## Analysis\n"

// keptAnalysis returns the hand-written analysis of the file at path, from its heading to the end,
// or "" when there is none.
func keptAnalysis(path string) string {
	old, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if i := strings.Index(string(old), analysisHeading); i >= 0 {
		return string(old[i:])
	}
	return ""
}

// parseCells reads the -cells flag: "" is every cell, else MODE/C items such as "json/8,stream/32".
func parseCells(s string) ([]cellSpec, error) {
	if strings.TrimSpace(s) == "" {
		return cellSpecs(), nil
	}
	var out []cellSpec
	for item := range strings.SplitSeq(s, ",") {
		mode, c, ok := strings.Cut(strings.TrimSpace(item), "/")
		n, err := strconv.Atoi(c)
		if !ok || err != nil || n < 1 || (mode != "json" && mode != "stream") {
			return nil, fmt.Errorf("-cells: %q is not MODE/C with MODE json or stream and C ≥ 1", item)
		}
		out = append(out, cellSpec{stream: mode == "stream", concurrency: n})
	}
	return out, nil
}

// cellSpecs is the order cells are reported in.
func cellSpecs() []cellSpec {
	var out []cellSpec
	for _, stream := range []bool{false, true} {
		for _, c := range []int{1, 8, 32} {
			out = append(out, cellSpec{stream: stream, concurrency: c})
		}
	}
	return out
}
