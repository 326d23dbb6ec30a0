// Command chaos drives Llamatray with a real llama-server through faults and checks that no request
// is ever cut by an eviction: three models with room for one, many clients in a random mix of
// models, streaming and not, some hanging up mid-stream, one child SIGKILLed mid-run and a spell of
// memory pressure. It prints what happened and exits non-zero on any violation.
//
//	go run ./router/testbed/chaos -llama-server PATH [-requests 2000] [-clients 32] [-duration 0]
//	go run ./router/testbed/chaos -llama-server PATH -soak [-requests 20000] [-clients 8]
//
// -soak sends many requests to one model and checks that Llamatray's own memory and goroutines come
// back to where they were after a warm-up.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(mainErr(os.Args[1:], os.Stdout, os.Stderr))
}

func mainErr(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-sim" || args[0] == "-sim-small") {
		return simMain(args, stdout, stderr)
	}
	p, soak, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "chaos:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if soak {
		s, err := runSoak(ctx, p, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "chaos: soak:", err)
			return 1
		}
		v := s.violations()
		s.print(stdout, v)
		s.cleanup(p.keep || len(v) > 0, stderr)
		if len(v) > 0 {
			return 1
		}
		return 0
	}
	run, err := runChaos(ctx, p)
	if err != nil {
		fmt.Fprintln(stderr, "chaos:", err)
		return 1
	}
	counts, v := run.verdict()
	run.print(stdout, counts, v)
	run.cleanup(p.keep || len(v) > 0)
	if len(v) > 0 {
		return 1
	}
	return 0
}

// defaults are the chaos run's parameters before flags.
func defaults() params {
	return params{
		llamaServer:     os.Getenv("LLAMA_SERVER"),
		requests:        2000,
		clients:         32,
		widths:          []int{384, 512, 640},
		blocks:          4,
		queueTimeout:    8 * time.Second,
		fairWait:        time.Second,
		disconnectFrac:  0.1,
		killAt:          0.35,
		pressureAt:      0.65,
		pressure:        true,
		pressureFor:     4 * time.Second,
		pressureDeficit: 32 << 20,
		reserve:         64 << 20,
		maxTokens:       [2]int{4, 24},
		requestTimeout:  3 * time.Minute,
		seed:            1,
		progress:        os.Stderr,
	}
}

func parseFlags(args []string, stderr io.Writer) (params, bool, error) {
	p := defaults()
	p.progress = stderr
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&p.llamaServer, "llama-server", p.llamaServer, "llama-server binary (default $LLAMA_SERVER)")
	fs.IntVar(&p.requests, "requests", p.requests, "requests to send (default 2000; 20000 with -soak)")
	fs.IntVar(&p.clients, "clients", p.clients, "concurrent clients (default 32; 8 with -soak)")
	fs.DurationVar(&p.duration, "duration", 0, "stop sending after this long (0 = when -requests are sent)")
	widths := fs.String("widths", "384,512,640", "model widths, one model each (their RSS must differ clearly)")
	fs.IntVar(&p.blocks, "blocks", p.blocks, "blocks of every model")
	fs.DurationVar(&p.queueTimeout, "queue-timeout", p.queueTimeout, "queue_timeout: short, so some requests get a clean 503")
	fs.DurationVar(&p.fairWait, "fair-wait", p.fairWait, "fair_wait: how long a queued load waits before busy models are drained")
	fs.BoolVar(&p.pressure, "pressure", p.pressure, "inject memory pressure (-pressure=false leaves it out, to look at the other faults alone)")
	fs.DurationVar(&p.pressureFor, "pressure-for", p.pressureFor, "how long memory pressure lasts (at least two engine samples)")
	deficit := fs.Int64("pressure-deficit-mib", p.pressureDeficit>>20, "how far below memory_reserve Available reads under pressure, MiB")
	fs.BoolVar(&p.maxLoaded, "max-loaded", false, "use max_loaded = 1 instead of a memory limit with room for one")
	fs.Uint64Var(&p.seed, "seed", p.seed, "seed of the random mix")
	fs.BoolVar(&p.keep, "keep", false, "keep the temporary folder (models, Llamatray log); kept anyway on a violation")
	soak := fs.Bool("soak", false, "soak mode: one model, many requests, memory and goroutines checked")
	if err := fs.Parse(args); err != nil {
		return p, false, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *soak {
		if !set["requests"] {
			p.requests = 20000
		}
		if !set["clients"] {
			p.clients = 8
		}
	}
	p.pressureDeficit = *deficit << 20
	var err error
	if p.widths, err = parseWidths(*widths); err != nil {
		return p, false, err
	}
	switch {
	case fs.NArg() > 0:
		return p, false, fmt.Errorf("unexpected arguments: %q", fs.Args())
	case p.llamaServer == "":
		return p, false, errors.New("no llama-server: pass -llama-server PATH or set LLAMA_SERVER (`make llama-server` prints one)")
	case p.requests < 1 || p.clients < 1:
		return p, false, errors.New("-requests and -clients must be at least 1")
	case *soak && p.requests <= 1000:
		return p, false, errors.New("-soak needs more than the 1000 warm-up requests")
	case !*soak && len(p.widths) < 2:
		return p, false, errors.New("-widths needs at least two models")
	case p.queueTimeout <= 0 || p.fairWait <= 0 || p.pressureFor <= 0 || p.blocks < 1 || *deficit < 1:
		return p, false, errors.New("-queue-timeout, -fair-wait, -pressure-for, -blocks and -pressure-deficit-mib must be positive")
	}
	if _, err := os.Stat(p.llamaServer); err != nil {
		return p, false, fmt.Errorf("llama-server: %w", err)
	}
	return p, *soak, nil
}

func parseWidths(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 16 || n%8 != 0 {
			return nil, fmt.Errorf("-widths: %q is not a width (a multiple of 8, at least 16)", f)
		}
		out = append(out, n)
	}
	return out, nil
}
