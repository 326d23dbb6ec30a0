package main

// -workers: one model split over two llama.cpp RPC servers, reached straight (llama-server --rpc
// to their loopback ports) and through Llamatray's worker links (two worker.Serve in this process,
// each running its own rpc-server, and the head's two link ends): tokens per second both ways,
// the time to load the model, and the link's CPU per MB carried (this process's CPU time, which
// holds both ends of both links and the HTTP client, less the same requests' straight rounds).
// The Workers section of docs/benchmarks.md.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/testbed/bench/harness"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
	"github.com/llamatray/llamatray/router/worker"
)

const workersHeading = "## Workers"

const (
	workersWidth    = 256
	workersBlocks   = 8
	workersTokens   = 64 // n_predict of every request
	workersPerRound = 4  // requests per target per round
	workersToken    = "bench-worker-token-0123456789-abcdef"
)

// workersTarget is one way of reaching the two rpc-servers.
type workersTarget struct {
	name    string
	srv     *harness.Direct
	load    time.Duration
	tokens  int64
	elapsed time.Duration
	cpu     time.Duration // this process's CPU during its rounds
	bytes   int64         // carried by the links during its rounds
	perSec  []float64
}

func mainWorkers(ctx context.Context, o options) int {
	return mainSection(ctx, o, workersHeading, runWorkers)
}

// rpcServerBeside is llama.cpp's RPC worker beside llama-server: Debian's name, then upstream's.
func rpcServerBeside(llama string) (string, error) {
	for _, n := range []string{"ggml-rpc-server", "rpc-server"} {
		p := filepath.Join(filepath.Dir(llama), n)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no ggml-rpc-server or rpc-server beside %s (`make rpc-server`)", llama)
}

func runWorkers(ctx context.Context, o options) (string, error) {
	machine := harness.Describe(ctx, o.llamaServer)
	loadStart := harness.LoadAvg()
	rpcBin, err := rpcServerBeside(o.llamaServer)
	if err != nil {
		return "", err
	}
	tmp, cleanup, err := workDir("llamatray-bench-workers-", o.keep)
	if err != nil {
		return "", err
	}
	defer cleanup()
	model := filepath.Join(tmp, "split.gguf")
	if err := ggufwrite.WriteLlama(model, ggufwrite.LlamaOptions{Width: workersWidth, Blocks: workersBlocks, Seed: 3, Name: "bench-split"}); err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Straight: two rpc-servers of our own on loopback.
	var straight []string
	for i := range 2 {
		addr, stop, err := startRPCServer(ctx, rpcBin, filepath.Join(tmp, fmt.Sprintf("rpc-straight-%d.log", i)))
		if err != nil {
			return "", err
		}
		defer stop()
		straight = append(straight, addr)
	}
	// Linked: two workers (each with its own rpc-server) and the head's ends.
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var ends []*worker.End
	for i := range 2 {
		ready := make(chan string, 1)
		done := make(chan error, 1)
		wctx, wcancel := context.WithCancel(ctx)
		go func() {
			done <- worker.Serve(wctx, worker.Options{Listen: "127.0.0.1:0", Token: workersToken, RPCServer: rpcBin,
				Threads: 1, Logger: log, Name: fmt.Sprintf("bench%d", i), Ready: func(a string) { ready <- a }})
		}()
		defer func() { wcancel(); <-done }()
		var addr string
		select {
		case addr = <-ready:
		case err := <-done:
			return "", fmt.Errorf("worker %d: %w", i, err)
		}
		e, err := worker.Open(ctx, fmt.Sprintf("bench%d", i), addr, workersToken, log)
		if err != nil {
			return "", err
		}
		defer e.Close()
		ends = append(ends, e)
	}
	args := func(rpc string) []string {
		return []string{"--rpc", rpc, "-ngl", "99", "-c", "2048", "-np", "1", "-t", "1"}
	}
	targets := []*workersTarget{{name: "straight to the rpc-servers"}, {name: "through the links"}}
	progress("starting llama-server --rpc straight")
	targets[0].srv, targets[0].load, err = harness.StartDirect(ctx, o.llamaServer, model, args(strings.Join(straight, ",")), filepath.Join(tmp, "straight.log"))
	if err != nil {
		return "", err
	}
	defer targets[0].srv.Stop()
	progress("starting llama-server --rpc through the links")
	cpu0, _ := harness.ProcessCPU()
	targets[1].srv, targets[1].load, err = harness.StartDirect(ctx, o.llamaServer, model, args(ends[0].Addr()+","+ends[1].Addr()), filepath.Join(tmp, "linked.log"))
	if err != nil {
		return "", err
	}
	defer targets[1].srv.Stop()
	cpu1, _ := harness.ProcessCPU()
	loadBytes := carried(ends)
	loadCPU := cpu1 - cpu0

	client := harness.NewClient(2)
	warm := map[string]bool{}
	for round := range o.slices {
		order := []*workersTarget{targets[0], targets[1]}
		if round%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, t := range order {
			if !warm[t.name] {
				if _, _, err := completionTokens(ctx, client, t.srv.URL); err != nil {
					return "", fmt.Errorf("%s: %w", t.name, err)
				}
				warm[t.name] = true
			}
			c0, _ := harness.ProcessCPU()
			b0 := carried(ends)
			for range workersPerRound {
				n, d, err := completionTokens(ctx, client, t.srv.URL)
				if err != nil {
					return "", fmt.Errorf("%s: %w", t.name, err)
				}
				t.tokens += n
				t.elapsed += d
				t.perSec = append(t.perSec, float64(n)/d.Seconds())
			}
			c1, _ := harness.ProcessCPU()
			t.cpu += c1 - c0
			t.bytes += carried(ends) - b0
		}
		progress(fmt.Sprintf("round %d of %d", round+1, o.slices))
	}
	genBytes := targets[1].bytes
	if targets[0].bytes != 0 {
		return "", fmt.Errorf("the straight rounds went through the links (%d bytes)", targets[0].bytes)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", workersHeading)
	fmt.Fprintf(&b, "One model split over two llama.cpp RPC servers (`llama-server --rpc A,B -ngl 99`): straight to their loopback ports, and through Llamatray's worker links (TLS 1.3 with the pairing token; two `worker.Serve` and the head's two ends in the bench process, all on this machine, so the link costs CPU but no network). A %d-wide, %d-block random llama model (`-c 2048 -np 1 -t 1`, rpc-servers `-t 1`); %d rounds of %d requests of %d tokens per target, alternating which goes first.\n\n",
		workersWidth, workersBlocks, o.slices, workersPerRound, workersTokens)
	fmt.Fprintf(&b, "| target | model load (spawn to /health) | tokens/s (all requests) | median request tokens/s |\n|---|---:|---:|---:|\n")
	for _, t := range targets {
		fmt.Fprintf(&b, "| %s | %.2f s | %.1f | %.1f |\n", t.name, t.load.Seconds(), float64(t.tokens)/t.elapsed.Seconds(), medianRate(t.perSec))
	}
	linkCPU := targets[1].cpu - targets[0].cpu // the same requests' client CPU taken out
	fmt.Fprintf(&b, "\nThe links carried %s while the model loaded (%s of this process's CPU: %.1f ms per MB) and %s for %d generated tokens (%s per token; %s of CPU above the straight rounds': %.1f ms per MB). A token is many small RPC messages, so the CPU per MB of generation is a cost per message (each message sealed and opened as a TLS record, with two more socket reads and writes than straight), not per byte; the bulk of a load costs far less per MB. Here the links' CPU also competes for the same cores with llama-server and the rpc-servers.\n\n",
		mb(loadBytes), loadCPU.Round(time.Millisecond), perMB(loadCPU, loadBytes), mb(genBytes), targets[1].tokens, kb(genBytes/max(targets[1].tokens, 1)), linkCPU.Round(time.Millisecond), perMB(linkCPU, genBytes))
	fmt.Fprintf(&b, "Machine: %s. Load average %s at the start, %s at the end. Command: `go run ./router/testbed/bench -workers %s`.\n",
		machine, loadStart, harness.LoadAvg(), homeTilde(strings.Join(os.Args[2:], " ")))
	return b.String(), nil
}

func carried(ends []*worker.End) int64 {
	var n int64
	for _, e := range ends {
		s, r := e.Bytes()
		n += s + r
	}
	return n
}

func mb(n int64) string { return fmt.Sprintf("%.2f MB", float64(n)/1e6) }
func kb(n int64) string { return fmt.Sprintf("%.1f kB", float64(n)/1e3) }

func perMB(d time.Duration, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / 1e3 / (float64(n) / 1e6)
}

// completionTokens asks base's /completion for workersTokens tokens and returns how many came and
// how long the request took.
func completionTokens(ctx context.Context, c *http.Client, base string) (int64, time.Duration, error) {
	body, _ := json.Marshal(map[string]any{"prompt": "Once upon a time", "n_predict": workersTokens, "ignore_eos": true, "seed": 1})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/completion", bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	var r struct {
		TokensPredicted int64 `json:"tokens_predicted"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK || r.TokensPredicted == 0 {
		return 0, 0, fmt.Errorf("completion: status %d, %d tokens, %v", resp.StatusCode, r.TokensPredicted, err)
	}
	return r.TokensPredicted, time.Since(t0), nil
}

// startRPCServer runs rpcBin on a free loopback port until ctx ends or stop is called, and waits
// until it accepts connections.
func startRPCServer(ctx context.Context, rpcBin, logPath string) (string, func(), error) {
	port, err := harness.FreePort()
	if err != nil {
		return "", nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(rpcBin, "-H", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return "", nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	stop := func() { cmd.Process.Kill(); <-exited }
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-exited:
			return "", nil, fmt.Errorf("%s exited before it listened (log: %s)", rpcBin, logPath)
		case <-ctx.Done():
			stop()
			return "", nil, ctx.Err()
		case <-tick.C:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return addr, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("%s did not listen on %s in 30 s (log: %s)", rpcBin, addr, logPath)
		}
	}
}
