package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/envconfig"
	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/testbed/bench/harness"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
	"github.com/llamatray/llamatray/router/testbed/simhold"
)

// The simulated machines (-sim): the chaos mix on machines this one is not, with the fake
// llama-server booking what it holds per device on a simulated machine (envconfig.SimMachine). Twenty
// header-only models of 2–40 GB (sizes declared, not written), loads that take time in proportion
// to their size, sleepers and pressure from other programs. Every sample checks: per-device memory
// held ≤ that device's memory, no model with a lease stopping; every answer: no 503 for a request
// that waited less than queue_timeout; the engine's events: FIFO among waiters for memory and queued
// sleepers woken, not killed (checkQueue); at the end every lease 0 and no child left.

var simMachines = []mem.SimMachine{
	{Name: "24 GB NVIDIA + 64 GB RAM", RAMMiB: 64 << 10, GPUs: []mem.SimGPU{{Device: "CUDA0", Name: "NVIDIA GeForce RTX 4090", MiB: 24 << 10}}},
	{Name: "two 16 GB GPUs + 64 GB RAM", RAMMiB: 64 << 10, GPUs: []mem.SimGPU{{Device: "CUDA0", Name: "NVIDIA RTX A4000", MiB: 16 << 10}, {Device: "CUDA1", Name: "NVIDIA RTX A4000", MiB: 16 << 10}}},
	{Name: "36 GB Apple-silicon Mac", RAMMiB: 36 << 10, Unified: true, GPUs: []mem.SimGPU{{Device: "MTL0", Name: "Apple M3 Pro"}}},
	// With workers (simworkers.go): some models spread over this machine's GPU and the workers'.
	{Name: "16 GB NVIDIA + two 12 GB workers + 64 GB RAM", RAMMiB: 64 << 10, GPUs: []mem.SimGPU{{Device: "CUDA0", Name: "NVIDIA GeForce RTX 4080", MiB: 16 << 10}}},
}

// simParams size a simulated run.
type simParams struct {
	requests     int
	clients      int
	loadPerGB    time.Duration // load time per GB of model
	queueTimeout time.Duration
	out          string // benchmarks file to write the figures into ("" = none)
	machines     []mem.SimMachine
}

// simResult is one machine's figures.
type simResult struct {
	machine    mem.SimMachine
	requests   int
	ok, s503   int
	s507       int // too large even alone: refused at once
	loads      int
	evictions  int
	fitted     int // loads whose child offloaded fewer layers to stay within its share (--fit-target)
	fittedOf   int // loads the fakes recorded
	queue      queueStats
	p50, p99   time.Duration
	waitP50    time.Duration // queue wait of the answered requests (the access log's queue_wait)
	waitP99    time.Duration
	mostHeld   map[string]int64 // device (and "RAM") → most held at a sample
	budget     map[string]int64
	violations []string
	took       time.Duration
	workers    *workerStats // on a machine with workers
}

func runSim(ctx context.Context, sp simParams, stdout, stderr io.Writer) int {
	tmp, err := os.MkdirTemp("", "llamatray-sim-")
	if err != nil {
		fmt.Fprintln(stderr, "sim:", err)
		return 1
	}
	if os.Getenv("SIM_KEEP") == "" {
		defer os.RemoveAll(tmp)
	} else {
		fmt.Fprintln(stderr, "sim: keeping", tmp)
	}
	fake := filepath.Join(tmp, "fakellama")
	if out, err := exec.Command("go", "build", "-o", fake, "./router/testbed/fakellama").CombinedOutput(); err != nil {
		fmt.Fprintf(stderr, "sim: building the fake llama-server (run from the repository root): %v\n%s", err, out)
		return 1
	}
	var results []simResult
	bad := false
	for i, m := range sp.machines {
		r, err := simOne(ctx, sp, m, filepath.Join(tmp, fmt.Sprint(i)), fake, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "sim: %s: %v\n", m.Name, err)
			return 1
		}
		results = append(results, r)
		bad = bad || len(r.violations) > 0
	}
	text := simReport(sp, results)
	fmt.Fprint(stdout, text)
	if sp.out != "" && !bad {
		if err := harness.ReplaceSection(sp.out, "## Simulated machines", text); err != nil {
			fmt.Fprintln(stderr, "sim:", err)
			return 1
		}
	}
	if bad {
		return 1
	}
	return 0
}

func simOne(ctx context.Context, sp simParams, m mem.SimMachine, dir, fake string, progress io.Writer) (simResult, error) {
	res := simResult{machine: m, mostHeld: map[string]int64{}, budget: map[string]int64{}}
	t0 := time.Now()
	models := filepath.Join(dir, "models")
	if err := os.MkdirAll(models, 0o755); err != nil {
		return res, err
	}
	if err := harness.IsolateXDG(dir); err != nil {
		return res, err
	}
	machine := filepath.Join(dir, "machine.json")
	b, _ := json.Marshal(m)
	if err := os.WriteFile(machine, b, 0o644); err != nil {
		return res, err
	}
	os.Setenv(string(envconfig.SimMachine), machine) // the children inherit it
	defer os.Unsetenv(string(envconfig.SimMachine))
	for _, g := range m.Devices() {
		res.budget[g.Device] = g.Total
	}
	res.budget["RAM"] = m.RAMMiB << 20
	// Twenty models of 2 to 40 GB: f16 llama blocks of about 0.4 GB each.
	sizes := map[int]int{} // GB → blocks
	for i := 0; i < 20; i++ {
		gb := 2 + 2*i
		blocks := max((gb*1000-524)/404, 1)
		sizes[gb] = blocks
		path := filepath.Join(models, fmt.Sprintf("sim-%02dgb.gguf", gb))
		if err := ggufwrite.WriteFile(path, ggufwrite.Header(ggufwrite.HeaderOptions{Blocks: blocks, FileType: 1, Name: fmt.Sprintf("sim %d GB", gb)})); err != nil {
			return res, err
		}
	}
	cfg, err := harness.Config(models, fake)
	if err != nil {
		return res, err
	}
	cfg.Defaults.CtxSize = 4096
	cfg.QueueTimeout = config.Duration(sp.queueTimeout)
	cfg.FairWait = config.Duration(sp.queueTimeout / 4)
	cfg.LoadTimeout = config.Duration(5 * time.Minute)
	cfg.IdleSleep = config.Duration(2 * time.Second) // sleepers
	cfg.MemoryReserve = config.GiB
	// A model larger than the GPUs is given the -ngl that fits about 80% of them (a layer is 0.4 GB
	// of weights and 64 MiB of KV cache), the rest runs from RAM; the others are left to --fit,
	// within the share the engine passes each child (--fit-target).
	var gpuMiB int64
	for _, g := range m.Devices() {
		gpuMiB += g.Total >> 20
	}
	cfg.Models = map[string]config.Model{}
	for gb, blocks := range sizes {
		if int64(gb)*1024 > gpuMiB*8/10 {
			n := min(int(gpuMiB*8/10/(404+simKVLayerMiB)), blocks)
			cfg.Models[fmt.Sprintf("sim-%02dgb", gb)] = config.Model{GPULayers: &n}
		}
	}
	logf, err := os.Create(filepath.Join(dir, "llamatray.log"))
	if err != nil {
		return res, err
	}
	defer logf.Close()
	spec, withWorkers := simWorkers[m.Name]
	var ws *workerSet
	if withWorkers {
		if ws, err = startWorkers(ctx, dir, spec.workers, slog.New(slog.NewTextHandler(logf, nil))); err != nil {
			return res, err
		}
		defer ws.close()
		cfg.Workers = ws.config()
		for id, names := range spec.models {
			mc := cfg.Models[id]
			mc.Workers, mc.GPULayers = names, nil // left to --fit, over the GPU and the workers' devices
			cfg.Models[id] = mc
		}
		res.workers = &workerStats{killed: spec.kill, down: workerDown}
		var names []string
		for _, w := range spec.workers {
			res.budget[w.Name+"/RPC0"] = w.MiB << 20
			names = append(names, fmt.Sprintf("%s %d GiB", w.Name, w.MiB>>10))
		}
		res.workers.names = strings.Join(names, ", ")
	}
	access := newAccessLog(slog.NewTextHandler(logf, nil)) // the queue wait of every request
	checks := newCheckLog(access)                          // the engine's checks of workers
	svc, err := harness.StartService(ctx, cfg, slog.New(checks), mem.Sim(machine))
	if err != nil {
		return res, err
	}
	// Each fake holds what llama.cpp would: the whole model's weights and KV cache, split by the
	// layers it offloads (the rest in RAM), and takes its time to load.
	record := filepath.Join(dir, "fakes.jsonl")
	var ids []string
	for _, v := range svc.Models() {
		if v.Meta == nil {
			continue
		}
		var gb int
		if _, err := fmt.Sscanf(v.ID, "sim-%dgb", &gb); err != nil || sizes[gb] == 0 {
			return res, fmt.Errorf("model %s is none of the simulated ones", v.ID)
		}
		b, _ := json.Marshal(simKnobs(v.Meta.SizeBytes, sizes[gb], sp.loadPerGB, record))
		if err := os.WriteFile(v.Meta.Path+".fake.json", b, 0o644); err != nil {
			return res, err
		}
		ids = append(ids, v.ID)
	}
	sort.Strings(ids)
	for id := range cfg.Models {
		if _, err := svc.Model(id); err != nil {
			return res, fmt.Errorf("the catalog has no %s: %w", id, err)
		}
	}
	events, stopEvents := watchEvents(svc.Engine())

	// Sampler: ground truth from the machine's held files, and the engine's leases.
	stop := make(chan struct{})
	var mu sync.Mutex // guards res.violations and res.mostHeld
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			held, _ := mem.SimHoldings(machine)
			sum := map[string]int64{}
			for pid, h := range held {
				if pid == 0 {
					continue
				}
				sum["RAM"] += h.RAM
				for d, n := range h.Devices {
					sum[d] += n
					if m.Unified {
						sum["RAM"] += n
					}
				}
			}
			var v []string
			for d, n := range sum {
				if d != "RAM" && n > res.budget[d] {
					var who []string
					for pid, h := range held {
						if h.Devices[d] > 0 {
							who = append(who, fmt.Sprintf("pid %d %d MiB", pid, h.Devices[d]>>20))
						}
					}
					sort.Strings(who)
					v = append(v, fmt.Sprintf("%s holds %d MiB, over its %d MiB (%s)", d, n>>20, res.budget[d]>>20, strings.Join(who, ", ")))
				}
			}
			states := svc.Engine().Models()
			now := time.Now()
			for _, st := range states {
				// A model of the killed worker stops with its leases when the worker goes: that
				// failure is the worker's, checked apart (simworkers.go).
				lost := ws != nil && slices.Contains(spec.models[st.ID], spec.kill) && ws.cutBy(now, now)
				if st.Active > 0 && !lost && (st.State == engine.StateStopping || st.State == engine.StateUnloaded) {
					v = append(v, fmt.Sprintf("%s is %s with %d leases", st.ID, st.State, st.Active))
				}
			}
			if ws != nil {
				held, wv := ws.sample(states)
				v = append(v, wv...)
				maps.Copy(sum, held)
			}
			mu.Lock()
			for d, n := range sum {
				res.mostHeld[d] = max(res.mostHeld[d], n)
			}
			res.violations = append(res.violations, v...)
			mu.Unlock()
		}
	}()

	// Pressure: other programs take RAM for a while, half-way through.
	var sent, killing sync.WaitGroup
	next := make(chan int)
	go func() {
		defer close(next)
		for i := 0; i < sp.requests; i++ {
			if ws != nil && i == sp.requests/4 {
				killing.Add(1)
				go func() {
					defer killing.Done()
					waitInUse(svc.Engine(), spec.models, spec.kill, 20*time.Second)
					ws.kill(ctx, spec.kill)
					v := ws.comeBack(ctx, harness.NewClient(len(spec.models)), svc.ChatURL(), spec.kill, spec.models, res.workers)
					mu.Lock()
					res.violations = append(res.violations, v...)
					mu.Unlock()
				}()
			}
			if i == sp.requests/2 {
				simhold.Other(machine, mem.SimHolding{RAM: (m.RAMMiB << 20) * 7 / 10})
				time.AfterFunc(5*time.Second, func() { simhold.Other(machine, mem.SimHolding{}) })
			}
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	var lat []time.Duration
	client := harness.NewClient(sp.clients)
	for c := 0; c < sp.clients; c++ {
		sent.Add(1)
		go func(c int) {
			defer sent.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for i := range next {
				// A skewed mix: small models more often, every model now and then.
				id := ids[min(int(rng.ExpFloat64()*5), len(ids)-1)]
				began := time.Now()
				r := harness.Do(ctx, client, harness.Request{URL: svc.ChatURL(), Body: harness.ChatBody(id, i%3 == 0, 4, i), Stream: i%3 == 0})
				mu.Lock()
				res.requests++
				lat = append(lat, r.Latency)
				switch {
				case ws != nil && !r.OK() && slices.Contains(spec.models[id], spec.kill) && ws.cutBy(began, time.Now()):
					res.workers.failedOfKilled++ // its worker was killed under it, or was still coming back
				case r.OK():
					res.ok++
				case r.Status == 507:
					res.s507++
				case r.Status == 503:
					res.s503++
					if r.Code == "queue_timeout" && r.Latency < sp.queueTimeout-100*time.Millisecond {
						res.violations = append(res.violations, fmt.Sprintf("503 queue_timeout for %s after %s, under queue_timeout", id, r.Latency.Round(time.Millisecond)))
					}
				default:
					res.violations = append(res.violations, fmt.Sprintf("%s: status %d %s %v %s", id, r.Status, r.Code, r.Err, r.Snippet))
				}
				mu.Unlock()
			}
		}(c)
	}
	sent.Wait()
	killing.Wait()
	close(stop)
	wg.Wait()
	for _, st := range svc.Engine().Models() {
		if st.Active != 0 {
			res.violations = append(res.violations, fmt.Sprintf("%s: %d leases left at the end", st.ID, st.Active))
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := svc.Stop(sctx); err != nil {
		res.violations = append(res.violations, "stop: "+err.Error())
	}
	stopEvents()
	if ws != nil {
		ws.close() // the workers' rpc-servers are children of this process too
	}
	if kids := harness.ChildrenOf(os.Getpid()); len(kids) > 0 {
		res.violations = append(res.violations, fmt.Sprintf("children left: %v", kids))
	}
	if held, _ := mem.SimHoldings(machine); len(held) > 0 {
		for pid := range held {
			if pid != 0 {
				res.violations = append(res.violations, fmt.Sprintf("memory still booked at the end by pid %d", pid))
			}
		}
	}
	evs := events.snapshot()
	qv, qs := checkQueue(evs)
	res.violations = append(res.violations, qv...)
	res.queue = qs
	for _, ev := range evs {
		if ev.Kind == engine.EventState && ev.State == engine.StateLoading && ev.Cause == "" {
			res.loads++
		}
		if ev.Kind == engine.EventState && ev.Cause == engine.CauseEvicted {
			res.evictions++
		}
	}
	res.fitted, res.fittedOf = countFits(record)
	if ws != nil {
		var cv []string
		res.workers.starts, res.workers.checkedStarts, cv = checkStarts(record, checks.snapshot())
		res.violations = append(res.violations, cv...)
	}
	res.p50, res.p99 = harness.Percentile(lat, 50), harness.Percentile(lat, 99)
	waits := access.waits()
	res.waitP50, res.waitP99 = harness.Percentile(waits, 50), harness.Percentile(waits, 99)
	res.took = time.Since(t0)
	fmt.Fprintf(progress, "sim: %s: %d requests, %d loads (%d fitted by --fit-target), %d evictions, %d violations in %s\n", m.Name, res.requests, res.loads, res.fitted, res.evictions, len(res.violations), res.took.Round(time.Second))
	return res, nil
}

func simReport(sp simParams, rs []simResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Simulated machines\n\n`make sim`: the fake llama-server on described machines (LLAMATRAY_SIM_MACHINE), one of them with llama.cpp RPC workers (below), twenty header-only models of 2–40 GB, %d requests from %d clients each, loads of %s per GB, idle_sleep 2s (sleepers), queue_timeout %s, other programs taking 70%% of RAM for 5 s half-way. Queue wait is the router's own figure for each answered request (the access log's queue_wait: queued, loading or waking); latency is the whole request (queue wait, load and answer). Each fake holds what llama.cpp would (the whole weights and KV cache, split by the layers it offloads, the rest in RAM); models larger than the GPUs are given -ngl, the others are left to --fit within the share the engine passes each child (--fit-target): a load \"fitted\" offloaded fewer layers to stay inside it (the catalog's estimate runs a little below llama.cpp's buffers). Checked at every sample: memory held per device ≤ its budget, no model with a lease stopping; every answer: no 503 before queue_timeout; the engine's events: FIFO among waiters for memory (a model admitted while one ahead of it in line still waits only when memory is on its way for that one) and queued sleepers woken, not killed; at the end every lease 0 and no child left.\n\n", sp.requests, sp.clients, sp.loadPerGB, sp.queueTimeout)
	b.WriteString("| machine | requests | ok | 503 | 507 | loads | evictions | loads fitted by --fit-target | waited for memory: admitted / behind an earlier waiter / sleepers woken | queue wait p50 | p99 | latency p50 | p99 | most held per device / budget | violations | took |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rs {
		var devs []string
		for _, g := range r.machine.Devices() {
			devs = append(devs, fmt.Sprintf("%s %.1f / %.1f GiB", g.Device, float64(r.mostHeld[g.Device])/(1<<30), float64(r.budget[g.Device])/(1<<30)))
		}
		for _, d := range slices.Sorted(maps.Keys(r.budget)) {
			if strings.Contains(d, "/") { // a worker's device
				devs = append(devs, fmt.Sprintf("%s %.1f / %.1f GiB", d, float64(r.mostHeld[d])/(1<<30), float64(r.budget[d])/(1<<30)))
			}
		}
		devs = append(devs, fmt.Sprintf("RAM %.1f / %.1f GiB", float64(r.mostHeld["RAM"])/(1<<30), float64(r.budget["RAM"])/(1<<30)))
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d of %d | %d / %d / %d | %s | %s | %s | %s | %s | %d | %s |\n", r.machine.Name, r.requests, r.ok, r.s503, r.s507, r.loads, r.evictions, r.fitted, r.fittedOf,
			r.queue.admitted, r.queue.behind, r.queue.sleepersWok, r.waitP50.Round(time.Millisecond), r.waitP99.Round(time.Millisecond), r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond), strings.Join(devs, ", "), len(r.violations), r.took.Round(time.Second))
	}
	for _, r := range rs {
		if w := r.workers; w != nil {
			fmt.Fprintf(&b, "- %s: workers %s (each a real worker with a fake rpc-server); %d children started with --rpc, %d of them after a check of their workers; worker %s killed a quarter of the way through (once one of its models served a request) and started again %s later: %d requests of its models failed meanwhile (none of the others' may), and all its models answered again %s after its return (asked from then on, amid the other requests).\n",
				r.machine.Name, w.names, w.starts, w.checkedStarts, w.killed, w.down, w.failedOfKilled, w.backAfter.Round(time.Millisecond))
		}
	}
	for _, r := range rs {
		for i, v := range r.violations {
			if i == 5 {
				fmt.Fprintf(&b, "- %s: … %d more\n", r.machine.Name, len(r.violations)-5)
				break
			}
			fmt.Fprintf(&b, "- %s: %s\n", r.machine.Name, v)
		}
	}
	return b.String()
}

// simMain runs `chaos -sim` (the full run, figures into -out) or `chaos -sim-small` (the short one
// of CI).
func simMain(args []string, stdout, stderr io.Writer) int {
	sp := simParams{requests: 200, clients: 12, loadPerGB: 100 * time.Millisecond, queueTimeout: 20 * time.Second}
	if args[0] == "-sim-small" {
		sp = simParams{requests: 40, clients: 8, loadPerGB: 25 * time.Millisecond, queueTimeout: 10 * time.Second}
	}
	fs := flag.NewFlagSet("chaos "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&sp.requests, "requests", sp.requests, "requests per machine")
	fs.IntVar(&sp.clients, "clients", sp.clients, "concurrent clients")
	fs.DurationVar(&sp.loadPerGB, "load-per-gb", sp.loadPerGB, "load time per GB of model")
	fs.DurationVar(&sp.queueTimeout, "queue-timeout", sp.queueTimeout, "queue_timeout")
	fs.StringVar(&sp.out, "out", "", "benchmarks file whose \"## Simulated machines\" section gets the figures")
	machine := fs.String("machine", "", "run on this one machine description (JSON, as LLAMATRAY_SIM_MACHINE reads; router/testbed/gpucheck writes one of a real machine) instead of the built-in ones")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	sp.machines = simMachines
	if *machine != "" {
		m, err := mem.LoadSimMachine(*machine)
		if err != nil {
			fmt.Fprintln(stderr, "sim:", err)
			return 2
		}
		sp.machines = []mem.SimMachine{m}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runSim(ctx, sp, stdout, stderr)
}
