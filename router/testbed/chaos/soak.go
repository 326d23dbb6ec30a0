package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/bench/harness"
)

// soakTargets are the pass marks of a soak run.
const (
	soakRSSGrowth = 20 << 20 // Llamatray's own RSS may grow this much after the warm-up
	soakWarmup    = 1000
)

// soakRun is what a soak run measured.
type soakRun struct {
	requests, clients     int
	failures              int
	firstFailure          string
	elapsed               time.Duration
	rssWarm, rssEnd       int64
	heapWarm, heapEnd     uint64
	goroutinesBase        int
	goroutinesEnd         int
	leases                int
	pidsSeen              int
	pidsLeft              map[int]string
	children              []int
	stopErr               error
	loadBefore, loadAfter string
	kinds                 map[string]int // failures by kind
	tmp, logPath          string
}

// cleanup removes the run's temporary folder, or says where it is when keep is set.
func (s *soakRun) cleanup(keep bool, progress io.Writer) {
	if keep {
		fmt.Fprintf(progress, "soak: kept %s (Llamatray log: %s)\n", s.tmp, s.logPath)
		return
	}
	os.RemoveAll(s.tmp)
}

// failureKind groups failures: status, error code, and the transport error without addresses.
func failureKind(r harness.Result) string {
	k := fmt.Sprintf("status %d %s", r.Status, r.Code)
	if r.Err != nil {
		msg := r.Err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		k += " " + msg
	}
	return k
}

// runSoak sends requests through Llamatray to one tiny model from clients clients, half streamed,
// and measures Llamatray's own RSS and goroutines after a warm-up and at the end.
func runSoak(ctx context.Context, p params, progress io.Writer) (*soakRun, error) {
	tmp, err := os.MkdirTemp("", "llamatray-soak-")
	if err != nil {
		return nil, err
	}
	w, err := newWorld(ctx, tmp, p.llamaServer, []int{64}, 2, nil)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	s := &soakRun{requests: p.requests, clients: p.clients, loadBefore: harness.LoadAvg(), tmp: tmp, logPath: w.logf.Name(), kinds: map[string]int{}}
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
	id := w.models[0].id
	if err := w.svc.Engine().Load(ctx, id); err != nil {
		return nil, fmt.Errorf("loading %s: %w", id, err)
	}
	client := harness.NewClient(p.clients)
	var mu sync.Mutex // guards s.failures and s.firstFailure
	send := func(n int) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range p.clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := next.Add(1)
					if int(i) > n || ctx.Err() != nil {
						return
					}
					stream := i%2 == 0
					r := harness.Do(ctx, client, harness.Request{URL: w.svc.ChatURL(), Body: harness.ChatBody(id, stream, 8, int(i)), Stream: stream})
					if !r.OK() {
						mu.Lock()
						s.failures++
						s.kinds[failureKind(r)]++
						if s.firstFailure == "" {
							s.firstFailure = describe(r)
						}
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
	}

	start := time.Now()
	send(min(soakWarmup, p.requests))
	s.goroutinesBase = settleGoroutines(client, -1)
	s.rssWarm, s.heapWarm = memNow()
	fmt.Fprintf(progress, "soak: warm-up done: RSS %s, %d goroutines; sending %d more\n", harness.MiB(s.rssWarm), s.goroutinesBase, p.requests-soakWarmup)
	if p.requests > soakWarmup {
		send(p.requests - soakWarmup)
	}
	s.elapsed = time.Since(start)
	s.goroutinesEnd = settleGoroutines(client, s.goroutinesBase)
	s.rssEnd, s.heapEnd = memNow()
	s.loadAfter = harness.LoadAvg()

	for _, m := range w.svc.Engine().Models() {
		s.leases += m.Active
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	s.stopErr = w.stop(sctx)
	cancel()
	stopped = true
	stopTracking()
	<-pids.done
	seen := pids.all()
	s.pidsSeen = len(seen)
	s.pidsLeft = waitGone(seen, 10*time.Second)
	s.children = harness.ChildrenOf(os.Getpid())
	return s, ctx.Err()
}

// settleGoroutines closes the client's idle connections and waits for the goroutine count to settle
// after a GC: down to target when target ≥ 0, else unchanged for 4 s (idle upstream connections
// close after 3 s). It gives up after 30 s and returns the last count.
func settleGoroutines(c interface{ CloseIdleConnections() }, target int) int {
	c.CloseIdleConnections()
	last, since := -1, time.Now()
	n := 0
	testbed.Poll(context.Background(), 30*time.Second, 10*time.Millisecond, func() bool {
		runtime.GC()
		n = runtime.NumGoroutine()
		if target >= 0 {
			return n <= target
		}
		if n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= 4*time.Second
	})
	return n
}

// memNow returns VmRSS and the Go heap in use after returning free memory to the OS.
func memNow() (int64, uint64) {
	debug.FreeOSMemory()
	rss, _ := harness.SelfRSS()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return rss, ms.HeapInuse
}

// violations lists what a soak run got wrong.
func (s *soakRun) violations() []string {
	var v []string
	if s.failures > 0 {
		v = append(v, fmt.Sprintf("%d requests failed; first: %s", s.failures, s.firstFailure))
	}
	if g := s.rssEnd - s.rssWarm; g > soakRSSGrowth {
		v = append(v, fmt.Sprintf("RSS grew %s after the warm-up (target ≤ %s)", harness.MiB(g), harness.MiB(soakRSSGrowth)))
	}
	if s.goroutinesEnd > s.goroutinesBase {
		v = append(v, fmt.Sprintf("%d goroutines at the end, %d after the warm-up", s.goroutinesEnd, s.goroutinesBase))
	}
	if s.leases != 0 {
		v = append(v, fmt.Sprintf("%d leases held at the end", s.leases))
	}
	for pid, who := range s.pidsLeft {
		v = append(v, fmt.Sprintf("process %d (%s) still runs after the service stopped", pid, who))
	}
	if len(s.children) > 0 {
		v = append(v, fmt.Sprintf("child processes left after the service stopped: %v", s.children))
	}
	if s.stopErr != nil {
		v = append(v, fmt.Sprintf("stopping the service: %v", s.stopErr))
	}
	return v
}

func (s *soakRun) print(w io.Writer, violations []string) {
	fmt.Fprintf(w, "\n## Soak: %d requests, %d clients, one 64×2 model, half streamed\n\n", s.requests, s.clients)
	fmt.Fprintf(w, "| figure | value |\n| --- | ---: |\n")
	fmt.Fprintf(w, "| wall time | %s (%.1f req/s) |\n", s.elapsed.Round(time.Millisecond), float64(s.requests)/s.elapsed.Seconds())
	fmt.Fprintf(w, "| failures | %d |\n", s.failures)
	for k, n := range s.kinds {
		fmt.Fprintf(w, "| failures: %s | %d |\n", k, n)
	}
	fmt.Fprintf(w, "| VmRSS after %d-request warm-up → end | %s → %s (%+.1f MiB; target ≤ +20 MiB) |\n", soakWarmup, harness.MiB(s.rssWarm), harness.MiB(s.rssEnd), float64(s.rssEnd-s.rssWarm)/(1<<20))
	fmt.Fprintf(w, "| Go heap in use, warm-up → end | %s → %s |\n", harness.MiB(int64(s.heapWarm)), harness.MiB(int64(s.heapEnd)))
	fmt.Fprintf(w, "| goroutines after warm-up → end (after GC) | %d → %d |\n", s.goroutinesBase, s.goroutinesEnd)
	fmt.Fprintf(w, "| leases at the end | %d |\n", s.leases)
	fmt.Fprintf(w, "| llama-server PIDs seen / left after stop | %d / %d |\n", s.pidsSeen, len(s.pidsLeft))
	fmt.Fprintf(w, "\nLoad average before: %s; after: %s. RSS is the whole process: Llamatray and the in-process load client.\n", s.loadBefore, s.loadAfter)
	if len(violations) == 0 {
		fmt.Fprintf(w, "\nPASS: no violations.\n")
		return
	}
	fmt.Fprintf(w, "\nFAIL: %d violations:\n", len(violations))
	for _, v := range violations {
		fmt.Fprintf(w, "- %s\n", v)
	}
}
