package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed/bench/harness"
)

// peersHeading starts the section `make bench-peers` writes; the rest of docs/benchmarks.md is kept.
const peersHeading = "## Peers"

func (r peerReport) markdown() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("%s\n\n", peersHeading)
	w("Llamatray, llama.cpp's router and llama-swap in one run on one machine, each with room for one model, in front of the same\n")
	w("llama-server (`-c 2048 -t 1`: one thread for every model server), with the same requests, against that llama-server called directly;\n")
	w("nginx in front of that direct llama-server is the floor a proxy hop costs here.\n")
	w("Written by `make bench-peers`:\n\n```sh\nLLAMA_SWAP=PATH make bench-peers   # NGINX=PATH optional\n%s\n```\n\n", r.cmdline)
	w("llama-swap is not served by the Go module proxy: build it from its source, `git clone https://github.com/mostlygeek/llama-swap && cd llama-swap && git checkout v250 && go build -ldflags '-X main.version=v250' -o llama-swap .`\n")
	w("(the web UI is not needed), and pass its path in `LLAMA_SWAP`. nginx is Debian's `nginx-light`, which `make bench-peers` unpacks\n")
	w("into the cache with `scripts/fetch-nginx.sh` (nothing installed system-wide); `NGINX=PATH` picks another.\n\n")
	w("%s.\n\n", r.machine)
	for _, p := range r.peers {
		w("- **%s**: %s\n", p.name, p.note)
	}
	w("\nLoad average (1, 5, 15 min): %s.\n\n", strings.Join(r.loadAvg, "; "))
	r.summary(w)

	w("| router | throughput c=8 vs direct | added p50 c=1 | router CPU µs/request c=8 | c=1 | router RSS | swap A↔B median | mixed run: failures / requests, wall | long stream while another model is asked for |\n")
	w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n")
	w("| direct llama-server | %.1f req/s | p50 %.2f ms | %.0f | %.0f | – | – | – | – |\n", r.direct8.rps(), ms(pct(r.direct1.lat, 50)),
		us(r.direct8.serverCPUPerRequest()), us(r.direct1.serverCPUPerRequest()))
	for _, p := range r.peers {
		if p.front {
			w("| %s | %.3f× (%.1f req/s) | %+.2f ms | %.0f | %.0f | %s | – | – | – |\n", p.name, ratioOf(p.json8, r.direct8), p.json8.rps(), ms(pct(p.json1.lat, 50))-ms(pct(r.direct1.lat, 50)),
				us(p.json8.serverCPUPerRequest()), us(p.json1.serverCPUPerRequest()), config.HumanSize(p.rss))
			continue
		}
		surv := "cut: " + p.survival.why
		if p.survival.survived {
			surv = "survives"
		}
		if p.survival.other != "" {
			surv += "; the other request: " + p.survival.other
		}
		swap := "–"
		if len(p.swaps) > 0 {
			swap = fmt.Sprintf("%.0f ms", ms(median(p.swaps)))
		}
		if p.swapFails > 0 {
			swap += fmt.Sprintf(" (%d failed: %s)", p.swapFails, p.swapErr)
		}
		mixed := fmt.Sprintf("%d / %d, %.1f s", p.mixedFails, p.mixedOK+p.mixedFails, p.mixedWall.Seconds())
		if p.mixedErr != "" {
			mixed += " (" + p.mixedErr + ")"
		}
		w("| %s | %.3f× (%.1f req/s) | %+.2f ms | %.0f | %.0f | %s | %s | %s | %s |\n", p.name, ratioOf(p.json8, r.direct8), p.json8.rps(), ms(pct(p.json1.lat, 50))-ms(pct(r.direct1.lat, 50)),
			us(p.json8.serverCPUPerRequest()), us(p.json1.serverCPUPerRequest()), config.HumanSize(p.rss), swap, mixed, surv)
	}
	w("\nThroughput: JSON chat completions (`max_tokens` %d) from 8 closed-loop clients, %s per server in %d rounds, the servers in\n", 8, r.duration, r.slices)
	w("rotating order. Router CPU: the router process's own CPU time per answer (its llama-server children not counted); for\n")
	w("direct, llama-server's. RSS: the router process after the load cells. Swap: %d requests alternating two models, one at a time,\n", 2*r.swapRounds)
	w("each unloading the other (load and answer included). Mixed: %d clients × %d requests, each for one of three models picked at\n", r.mixedClients, r.mixedEach)
	w("random (the same picks for every router). Long stream: %d tokens (`ignore_eos`) from a larger model; when its first token\n", r.longTokens)
	w("arrives a request for another model is sent.\n")
	for _, p := range r.peers {
		if p.warmFails > 0 {
			w("\n%s: %d of the 40 warm-up requests (20 JSON, 20 streamed, the first loading the model) failed (%s).\n", p.name, p.warmFails, p.warmErr)
		}
		if p.json8.failures+p.json1.failures > 0 {
			w("\n%s: %d failed requests in the load cells (%s).\n", p.name, p.json8.failures+p.json1.failures, firstNonEmpty(p.json8.firstErr, p.json1.firstErr))
		}
	}
	return b.String()
}

// summary is the proxy's cost beside each peer's: one column a router, nginx first. In brackets,
// the lowest and highest of the rounds, each against direct's round of the same pass.
func (r peerReport) summary(w func(string, ...any)) {
	w("|")
	for _, p := range r.peers {
		w(" | %s", p.name)
	}
	w(" |\n| ---")
	for range r.peers {
		w(" | ---:")
	}
	w(" |\n| c=8 throughput × direct")
	for _, p := range r.peers {
		w(" | %.2f%s", ratioOf(p.json8, r.direct8), spread("%.2f", perRound(p.json8, r.direct8, func(a, d round) float64 { return a.rps / d.rps })))
	}
	w(" |\n| c=1 p50 added")
	for _, p := range r.peers {
		w(" | %+.2f ms%s", ms(pct(p.json1.lat, 50))-ms(pct(r.direct1.lat, 50)), spread("%+.2f", perRound(p.json1, r.direct1, func(a, d round) float64 { return ms(a.p50) - ms(d.p50) })))
	}
	w(" |\n| router CPU per request (c=8)")
	for _, p := range r.peers {
		w(" | %.0f µs%s", us(p.json8.serverCPUPerRequest()), spread("%.0f", perRound(p.json8, r.direct8, func(a, _ round) float64 { return us(a.cpu) })))
	}
	w(" |\n\n")
	if r.slices > 1 {
		w("In brackets: the lowest and highest of the %d rounds, each against direct's round in the same pass.\n\n", r.slices)
	}
}

// perRound is f of each round of c with direct's round of the same pass; none when a round has no
// answers on either side.
func perRound(c, direct cellResult, f func(c, direct round) float64) []float64 {
	var v []float64
	for i := range min(len(c.rounds), len(direct.rounds)) {
		a, d := c.rounds[i], direct.rounds[i]
		if a.rps <= 0 || d.rps <= 0 {
			return nil
		}
		v = append(v, f(a, d))
	}
	return v
}

// spread is " (lo–hi)" of v in format, or nothing for fewer than two values.
func spread(format string, v []float64) string {
	if len(v) < 2 {
		return ""
	}
	return " (" + fmt.Sprintf(format, slices.Min(v)) + "–" + fmt.Sprintf(format, slices.Max(v)) + ")"
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// pct is the p-th percentile of ds.
func pct(ds []time.Duration, p float64) time.Duration { return harness.Percentile(ds, p) }

// writeDoc replaces the Peers section of the file at path (or appends it), keeping the rest.
func (r peerReport) writeDoc(path string) error {
	return harness.ReplaceSection(path, peersHeading, r.markdown())
}
