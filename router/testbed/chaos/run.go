package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/bench/harness"
)

// params shape a chaos run.
type params struct {
	llamaServer     string
	requests        int           // requests to issue in all
	clients         int           // concurrent clients
	duration        time.Duration // stop issuing after this long; 0 = until requests are issued
	widths          []int         // one model per width
	blocks          int
	queueTimeout    time.Duration
	fairWait        time.Duration
	disconnectFrac  float64 // share of clients that hang up mid-stream
	killAt          float64 // share of the run after which a busy child is SIGKILLed
	pressureAt      float64 // share of the run after which memory pressure starts
	pressure        bool    // inject memory pressure
	pressureFor     time.Duration
	pressureDeficit int64 // how far below the reserve Available reads
	reserve         int64 // memory_reserve
	maxTokens       [2]int
	requestTimeout  time.Duration // a request taking longer is a hang
	maxLoaded       bool          // use max_loaded = 1 instead of a memory limit
	seed            uint64
	progress        io.Writer
	keep            bool
}

// record is one request and its outcome.
type record struct {
	n       int
	model   string
	stream  bool
	abandon bool
	id      string
	res     harness.Result
}

// chaosRun is everything a run observed.
type chaosRun struct {
	p        params
	limit    int64 // memory_limit, 0 with max_loaded = 1
	reserve  int64 // memory_reserve
	deficit  int64 // how far below the reserve Available read under pressure
	models   []modelInfo
	records  []record
	wall     time.Time // when the load started
	elapsed  time.Duration
	kill     killInfo
	killErr  error
	pressure pressureInfo
	pressErr error
	facts    eventFacts
	access   *accessLog
	leases   map[string]int // leases held once every client finished (after settling)
	pidsSeen map[int]string
	pidsLeft map[int]string
	children []int // live children of this process after the service stopped
	stopErr  error
	logPath  string
	tmp      string // models, logs and state; removed by cleanup
}

// cleanup removes the run's temporary folder, or says where it is when keep is set.
func (run *chaosRun) cleanup(keep bool) {
	if keep {
		fmt.Fprintf(run.p.progress, "chaos: kept %s (Llamatray log: %s)\n", run.tmp, run.logPath)
		return
	}
	os.RemoveAll(run.tmp)
}

// runChaos starts Llamatray on three models with room for one, drives the mixed load with its
// faults, stops everything and returns what it saw. An error means the run could not be carried out;
// violations of the contract are in the returned run's verdict.
func runChaos(ctx context.Context, p params) (_ *chaosRun, err error) {
	tmp, err := os.MkdirTemp("", "llamatray-chaos-")
	if err != nil {
		return nil, err
	}
	w, err := newWorld(ctx, tmp, p.llamaServer, p.widths, p.blocks, func(c *config.Config) {
		c.MaxLoaded = 1 // while footprints are learned
		c.MemoryReserve = config.Size(p.reserve)
		c.QueueTimeout = config.Duration(p.queueTimeout)
		c.FairWait = config.Duration(p.fairWait)
	})
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	run := &chaosRun{p: p, access: w.access, logPath: w.logf.Name(), tmp: tmp}
	defer func() {
		if err != nil {
			run.cleanup(false)
		}
	}()
	events, unsubscribe := watchEvents(w.svc.Engine())
	defer unsubscribe()
	trackCtx, stopTracking := context.WithCancel(context.Background())
	pids := trackPIDs(trackCtx, w.svc.Engine())
	stopped := false
	defer func() {
		if !stopped {
			sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = w.stop(sctx)
		}
		stopTracking()
		<-pids.done
	}()

	if err := w.learnFootprints(ctx, p.progress); err != nil {
		return nil, err
	}
	learned := make([]int64, len(w.models))
	for i, m := range w.models {
		learned[i] = m.learned
	}
	cfg := w.cfg
	limit, ok := roomForOne(learned)
	switch {
	case p.maxLoaded:
		fmt.Fprintln(p.progress, "chaos: max_loaded = 1 (asked for with -max-loaded)")
	case !ok:
		fmt.Fprintf(p.progress, "chaos: footprints %v leave no clear room-for-one limit; using max_loaded = 1 instead\n", learned)
	default:
		cfg.MaxLoaded = 0
		cfg.MemoryLimit = config.Size(limit)
		if int64(cfg.MemoryReserve) >= limit {
			cfg.MemoryReserve = config.Size(limit / 4)
		}
		run.limit = limit
		fmt.Fprintf(p.progress, "chaos: memory_limit = %s (fits the largest model, not the two smallest together)\n", harness.MiB(limit))
	}
	run.reserve = int64(cfg.MemoryReserve)
	// Under pressure Available reads below the reserve by the deficit, at most half the reserve.
	run.deficit = min(p.pressureDeficit, run.reserve/2)
	if err := w.svc.Edit(func(c *config.Config) error { *c = cfg.Clone(); return nil }); err != nil {
		return nil, fmt.Errorf("applying the limit: %w", err)
	}
	if limit > 0 && !testbed.Poll(context.Background(), 10*time.Second, 10*time.Millisecond, func() bool { return w.svc.Engine().Budget().Limit == limit }) {
		return nil, fmt.Errorf("the engine's budget is %d after applying memory_limit %d", w.svc.Engine().Budget().Limit, limit)
	}
	run.models = w.models

	run.drive(ctx, w)

	// Every lease must come back once the clients are done; abandoned streams are noticed by the
	// server asynchronously, so give it a moment.
	testbed.Poll(context.Background(), 15*time.Second, 10*time.Millisecond, func() bool {
		for _, m := range w.svc.Engine().Models() {
			if m.Active != 0 {
				return false
			}
		}
		return true
	})
	run.leases = map[string]int{}
	for _, m := range w.svc.Engine().Models() {
		run.leases[m.ID] = m.Active
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	run.stopErr = w.stop(sctx)
	cancel()
	stopped = true
	stopTracking()
	<-pids.done
	<-events.done // the engine closes subscriptions when it stops
	run.pidsSeen = pids.all()
	run.pidsLeft = waitGone(run.pidsSeen, 10*time.Second)
	run.children = harness.ChildrenOf(os.Getpid())
	run.facts = analyze(events.snapshot())
	return run, nil
}

// drive runs the clients and the faults until every request is issued and answered.
func (run *chaosRun) drive(ctx context.Context, w *world) {
	p := run.p
	ids := w.ids()
	var issued atomic.Int64
	var faultsDone atomic.Bool
	run.wall = time.Now()
	share := func(f float64) bool {
		if p.duration > 0 && time.Since(run.wall) >= time.Duration(f*float64(p.duration)) {
			return true
		}
		return issued.Load() >= int64(f*float64(p.requests))
	}
	client := harness.NewClient(p.clients)
	defer client.CloseIdleConnections()
	reqCtx, stopClients := context.WithCancel(ctx)
	defer stopClients()

	var (
		mu      sync.Mutex // guards run.records
		wg      sync.WaitGroup
		clients sync.WaitGroup
	)
	disconnecting := int(float64(p.clients)*p.disconnectFrac + 0.5)
	for c := range p.clients {
		clients.Add(1)
		go func() {
			defer clients.Done()
			rng := rand.New(rand.NewPCG(p.seed, uint64(c)))
			for {
				// At least p.requests, and on until the faults are done so they hit a loaded router.
				n := int(issued.Add(1))
				if (n > p.requests && faultsDone.Load()) || (p.duration > 0 && time.Since(run.wall) > p.duration) || reqCtx.Err() != nil {
					return
				}
				rec := record{n: n, model: ids[rng.IntN(len(ids))], stream: rng.IntN(2) == 0, id: fmt.Sprintf("chaos-%d", n)}
				rec.abandon = rec.stream && c < disconnecting
				tokens := p.maxTokens[0] + rng.IntN(p.maxTokens[1]-p.maxTokens[0]+1)
				rctx, cancel := context.WithTimeout(reqCtx, p.requestTimeout)
				rec.res = harness.Do(rctx, client, harness.Request{
					URL: w.svc.ChatURL(), Body: harness.ChatBody(rec.model, rec.stream, tokens, n),
					Stream: rec.stream, RequestID: rec.id, Abandon: rec.abandon,
				})
				cancel()
				mu.Lock()
				run.records = append(run.records, rec)
				mu.Unlock()
				if !rec.res.OK() && !rec.res.Abandoned {
					clientBackoff(reqCtx) // a client that got an error waits a little before its next try
				}
			}
		}()
	}

	// Faults, in order: a SIGKILL, then memory pressure.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer faultsDone.Store(true)
		if !testbed.Poll(reqCtx, 0, 20*time.Millisecond, func() bool { return share(p.killAt) }) {
			return
		}
		run.kill, run.killErr = killBusyChild(reqCtx, w.svc.Engine())
		if run.killErr == nil {
			fmt.Fprintf(p.progress, "chaos: SIGKILLed %s's child (pid %d, %d active) after %s\n", run.kill.model, run.kill.pid, run.kill.active, time.Since(run.wall).Round(time.Millisecond))
		}
		if !p.pressure || !testbed.Poll(reqCtx, 0, 20*time.Millisecond, func() bool { return share(p.pressureAt) }) {
			return
		}
		fmt.Fprintf(p.progress, "chaos: memory pressure for %s after %s\n", p.pressureFor, time.Since(run.wall).Round(time.Millisecond))
		run.pressure, run.pressErr = injectPressure(reqCtx, w.probe, run.reserve, run.deficit, p.pressureFor)
	}()

	// Progress every 5 s.
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				mu.Lock()
				n := len(run.records)
				mu.Unlock()
				fmt.Fprintf(p.progress, "chaos: %s: %d answered; %s\n", time.Since(run.wall).Round(time.Second), n, states(w))
			}
		}
	}()
	clients.Wait()
	run.elapsed = time.Since(run.wall)
	close(done)
	stopClients() // only -duration ends the clients before the faults are done
	wg.Wait()
}

// states is a one-line summary of the models.
func states(w *world) string {
	s := ""
	for _, m := range w.svc.Engine().Models() {
		s += fmt.Sprintf("%s %s active %d queued %d; ", m.ID, m.State, m.Active, m.Queued)
	}
	return s
}

// clientBackoff is how long a client pauses after an error answer, as real clients do.
const clientBackoffFor = 100 * time.Millisecond

func clientBackoff(ctx context.Context) {
	t := time.NewTimer(clientBackoffFor)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
