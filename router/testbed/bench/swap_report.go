package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/testbed/bench/harness"
)

// swapHeading starts the section `make bench-swap` writes; the rest of docs/benchmarks.md is kept.
const swapHeading = "## Swaps at real size"

func (r swapReport) markdown() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("%s\n\n", swapHeading)
	w("What swapping costs when models do not all fit: %s; %d clients, each sending %d requests one after\n", r.desc, r.clients, r.each)
	w("the other, each for one of the three models at random (the same picks for every system), with room for one model and for two.\n")
	w("The systems run one after the other, in an order that turns each round. Loads: llama-server processes started (seen every\n")
	w("20 ms under the router's process). Time to first token and slowest request count from the moment the client sent the request.\n")
	w("Written by `make bench-swap` (llama-swap built as for `make bench-peers`):\n\n```sh\nLLAMA_SWAP=PATH make bench-swap\n%s\n```\n\n", r.cmdline)
	w("%s.\n\n", r.machine)
	seen := map[string]bool{}
	for _, x := range r.results {
		if k := x.name + x.note; !seen[k] {
			seen[k] = true
			w("- **%s** (room for %d): %s\n", x.name, x.room, x.note)
		}
	}
	w("\nLoad average (1, 5, 15 min): %s.\n\n", strings.Join(r.loadAvg, "; "))
	w("The floor: reading one model file from the page cache takes %s; llama-server started by hand takes %s to its first token.\n\n",
		secs(r.floor), secs(r.byHand))
	rooms := slices.Sorted(maps.Keys(r.fewest))
	for _, room := range rooms {
		if n := r.fewest[room]; n > 0 {
			w("The fewest loads any scheduler can make for these picks with room for %d (each client's requests served in order; a search over every order of loads): %d.\n", room, n)
		}
	}
	if len(rooms) > 0 {
		w("\n")
	}
	w("| room | system | round | loads | answered | total | TTFT p50 | TTFT p99 | slowest request |\n")
	w("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, x := range r.results {
		ans := fmt.Sprintf("%d / %d", len(x.lat), len(x.lat)+x.fails)
		if x.firstErr != "" {
			ans += " (" + x.firstErr + ")"
		}
		w("| %d | %s | %d | %d | %s | %s | %s | %s | %s |\n", x.room, x.name, x.round, x.loads, ans, secs(x.total),
			secs(harness.Percentile(x.ttft, 50)), secs(harness.Percentile(x.ttft, 99)), secs(slices.Max(append([]time.Duration{0}, x.lat...))))
	}
	w("\n")
	return b.String()
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// mainSwap runs -swap and returns the exit code.
func mainSwap(ctx context.Context, o options) int {
	r, err := runSwap(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	fmt.Print(r.markdown())
	if err := r.write(o.out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

// write puts the section into out ("": nowhere) and prints its table so far.
func (r swapReport) write(out string) error {
	md := r.markdown()
	fmt.Fprint(os.Stderr, md[strings.Index(md, "| room |"):])
	if out == "" {
		return nil
	}
	return harness.ReplaceSection(out, swapHeading, md)
}
