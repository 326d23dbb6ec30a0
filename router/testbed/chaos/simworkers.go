package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed/bench/harness"
	"github.com/llamatray/llamatray/router/worker"
)

// Simulated machines with workers: for a machine of simWorkers, the sim starts one worker.Serve per
// worker (the real worker: link, token, one session at a time) whose rpc-server is the fake of
// router/testbed/fakerpc, with one device of the worker's MiB, and configures them as
// [workers.NAME] with some models' workers lists. The fake llama-server reaches each through the
// head's link (--rpc), puts layers there and tells the fake rpc-server what it holds. Half-way, one
// worker is killed (its Serve ended: rpc-server killed, links closed) and started again on the same
// address a few seconds later.
//
// Checked: at every sample, no worker used by two running models (the engine's states) nor held by
// two llama-servers (the fake rpc-servers' own accounts), and what each worker's device holds ≤ its
// memory; every request that failed was for a model using the killed worker, while it was down or
// just after; once it is back, every model using it answers again; every child started with --rpc
// was started after its workers were checked (the engine's "workers checked", for those ends,
// before the child's start and after the model's previous start).

// simWorker is one worker of a simulated machine.
type simWorker struct {
	Name string
	MiB  int64
}

// simWorkers are the workers of the machines that have them, by machine name, and the models
// spread over them.
var simWorkers = map[string]struct {
	workers []simWorker
	models  map[string][]string // model ID → its workers
	kill    string              // the worker killed half-way
}{
	"16 GB NVIDIA + two 12 GB workers + 64 GB RAM": {
		workers: []simWorker{{"w1", 12 << 10}, {"w2", 12 << 10}},
		models:  map[string][]string{"sim-06gb": {"w1"}, "sim-08gb": {"w2"}, "sim-10gb": {"w1", "w2"}, "sim-18gb": {"w1", "w2"}},
		kill:    "w1",
	},
}

// workerDown is how long the killed worker stays down.
const workerDown = 3 * time.Second

// workerSet is a machine's running workers.
type workerSet struct {
	fakerpc string
	dir     string
	log     *slog.Logger
	token   string

	mu      sync.Mutex // guards addr, stop, downAt, upAt
	addr    map[string]string
	stop    map[string]func() // ends a worker's Serve and waits for it
	downAt  time.Time         // when the killed worker was killed
	upAt    time.Time         // when it accepted links again
	workers []simWorker
}

// workerStats are what the worker checks saw.
type workerStats struct {
	names          string // "w1 12 GiB, w2 12 GiB"
	starts         int    // children started with --rpc
	checkedStarts  int    // of them, after a check of their workers
	killed         string
	down           time.Duration
	failedOfKilled int           // requests of the killed worker's models that failed
	backAfter      time.Duration // from the worker's return to every model of it answering again
}

// startWorkers builds the fake rpc-server and starts every worker of ws.
func startWorkers(ctx context.Context, dir string, ws []simWorker, log *slog.Logger) (*workerSet, error) {
	s := &workerSet{dir: dir, log: log, addr: map[string]string{}, stop: map[string]func(){}, workers: ws}
	s.fakerpc = filepath.Join(dir, "fakerpc")
	if out, err := exec.Command("go", "build", "-o", s.fakerpc, "./router/testbed/fakerpc").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the fake rpc-server: %w\n%s", err, out)
	}
	var err error
	if s.token, err = worker.NewToken(); err != nil {
		return nil, err
	}
	for _, w := range ws {
		script := filepath.Join(dir, "rpc-server-"+w.Name)
		text := fmt.Sprintf("#!/bin/sh\nFAKE_RPC_MIB=%d FAKE_RPC_STATE=%s exec %s \"$@\"\n", w.MiB, s.statePath(w.Name), s.fakerpc)
		if err := os.WriteFile(script, []byte(text), 0o755); err != nil {
			return nil, err
		}
		if err := s.start(ctx, w.Name, "127.0.0.1:0"); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

func (s *workerSet) statePath(name string) string { return filepath.Join(s.dir, "rpc-"+name+".json") }

// start runs worker name's Serve on listen until stopped; it returns once the worker accepts links.
func (s *workerSet) start(ctx context.Context, name, listen string) error {
	ctx, cancel := context.WithCancel(ctx)
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- worker.Serve(ctx, worker.Options{Listen: listen, Token: s.token, RPCServer: filepath.Join(s.dir, "rpc-server-"+name),
			Name: name, Version: "sim", Logger: s.log, Ready: func(a string) { ready <- a }})
	}()
	select {
	case a := <-ready:
		s.mu.Lock()
		s.addr[name] = a
		s.stop[name] = func() { cancel(); <-done }
		s.mu.Unlock()
		return nil
	case err := <-done:
		cancel()
		return fmt.Errorf("worker %s: %w", name, err)
	}
}

// config is the workers' [workers.NAME] sections.
func (s *workerSet) config() map[string]config.Worker {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]config.Worker{}
	for name, a := range s.addr {
		out[name] = config.Worker{Address: a, Token: s.token}
	}
	return out
}

// kill ends worker name's Serve, and starts it again on its address after workerDown.
func (s *workerSet) kill(ctx context.Context, name string) {
	s.mu.Lock()
	stop, addr := s.stop[name], s.addr[name]
	delete(s.stop, name)
	s.downAt = time.Now()
	s.mu.Unlock()
	if stop == nil {
		return
	}
	stop()
	select {
	case <-time.After(workerDown):
	case <-ctx.Done():
		return
	}
	// The port was just closed; nothing else on this machine takes loopback ports from under it.
	if err := s.start(ctx, name, addr); err != nil {
		s.log.Error("sim: worker not restarted", "worker", name, "err", err)
		return
	}
	s.mu.Lock()
	s.upAt = time.Now()
	s.mu.Unlock()
}

// window is when the killed worker was down: from its kill to its return (zero times before).
func (s *workerSet) window() (down, up time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downAt, s.upAt
}

func (s *workerSet) close() {
	s.mu.Lock()
	stops := make([]func(), 0, len(s.stop))
	for _, f := range s.stop {
		stops = append(stops, f)
	}
	s.stop = map[string]func(){}
	s.mu.Unlock()
	for _, f := range stops {
		f()
	}
}

// rpcState is what a fake rpc-server wrote (router/testbed/fakerpc State).
type rpcState struct {
	Total   int64            `json:"total"`
	Held    int64            `json:"held"`
	Clients map[string]int64 `json:"clients"`
}

// sample reads every worker's fake rpc-server and the engine's states: what each worker's device
// holds (by the engine's device name NAME/RPC0) and the breaches of the worker rules.
func (s *workerSet) sample(models []engine.ModelStatus) (held map[string]int64, v []string) {
	held = map[string]int64{}
	for _, w := range s.workers {
		b, err := os.ReadFile(s.statePath(w.Name))
		if err != nil {
			continue // not written yet, or the worker is down
		}
		var st rpcState
		if json.Unmarshal(b, &st) != nil {
			continue
		}
		dev := w.Name + "/RPC0"
		held[dev] = st.Held
		if st.Held > st.Total {
			v = append(v, fmt.Sprintf("%s holds %d MiB, over its %d MiB (%v)", dev, st.Held>>20, st.Total>>20, st.Clients))
		}
		if len(st.Clients) > 1 {
			v = append(v, fmt.Sprintf("worker %s holds memory for %d llama-servers at once (%v)", w.Name, len(st.Clients), st.Clients))
		}
	}
	users := map[string][]string{}
	for _, m := range models {
		if m.State.Running() {
			for _, w := range m.Workers {
				users[w] = append(users[w], fmt.Sprintf("%s (%s)", m.ID, m.State))
			}
		}
	}
	for w, us := range users {
		if len(us) > 1 {
			sort.Strings(us)
			v = append(v, fmt.Sprintf("worker %s used by %d models at once: %s", w, len(us), strings.Join(us, ", ")))
		}
	}
	return held, v
}

// checkLog is a log handler that keeps the engine's "workers checked" records: when, and the ends
// the child was to get.
type checkLog struct {
	next slog.Handler
	s    *checkStore
}

type checkStore struct {
	mu     sync.Mutex // guards checks
	checks []workerCheck
}

type workerCheck struct {
	at  time.Time
	rpc string // the --rpc value
}

func newCheckLog(next slog.Handler) *checkLog { return &checkLog{next: next, s: &checkStore{}} }

func (h *checkLog) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *checkLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "workers checked" {
		c := workerCheck{at: r.Time}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "rpc" {
				if ends, ok := a.Value.Any().([]string); ok {
					c.rpc = strings.Join(ends, ",")
				}
			}
			return true
		})
		h.s.mu.Lock()
		h.s.checks = append(h.s.checks, c)
		h.s.mu.Unlock()
	}
	return h.next.Handle(ctx, r)
}

func (h *checkLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &checkLog{next: h.next.WithAttrs(as), s: h.s}
}

func (h *checkLog) WithGroup(name string) slog.Handler {
	return &checkLog{next: h.next.WithGroup(name), s: h.s}
}

func (h *checkLog) snapshot() []workerCheck {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return slices.Clone(h.s.checks)
}

// checkStarts reads the fakes' record: every child started with --rpc must have been started after
// a check of those ends that no earlier start used. It returns the starts with --rpc, those
// checked, and the breaches.
func checkStarts(record string, checks []workerCheck) (starts, checked int, v []string) {
	f, err := os.Open(record)
	if err != nil {
		return 0, 0, []string{"the fakes' record: " + err.Error()}
	}
	defer f.Close()
	used := make([]bool, len(checks))
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var ev struct {
			Event string    `json:"event"`
			PID   int       `json:"pid"`
			Time  time.Time `json:"time"`
			Args  []string  `json:"args"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Event != "start" {
			continue
		}
		i := slices.Index(ev.Args, "--rpc")
		if i < 0 || i+1 >= len(ev.Args) {
			continue
		}
		starts++
		rpc := ev.Args[i+1]
		ok := false
		for j := len(checks) - 1; j >= 0; j-- { // the latest unused check of these ends before the start
			if !used[j] && checks[j].rpc == rpc && !checks[j].at.After(ev.Time) {
				used[j], ok = true, true
				break
			}
		}
		if ok {
			checked++
		} else {
			v = append(v, fmt.Sprintf("pid %d started with --rpc %s at %s without a check of its workers before it", ev.PID, rpc, ev.Time.Format("15:04:05.000")))
		}
	}
	return starts, checked, v
}

// cutBy is whether a request from began to ended may have been failed by the killed worker: it
// ended after the kill and began before the worker had been back for workerSettle.
func (s *workerSet) cutBy(began, ended time.Time) bool {
	down, up := s.window()
	if down.IsZero() || ended.Before(down) {
		return false
	}
	return up.IsZero() || began.Before(up.Add(workerSettle))
}

// workerSettle is how long after the killed worker's return a request of its models may still fail
// (a model failed by the loss waits out its retry time).
const workerSettle = 10 * time.Second

// comeBack asks every model using the killed worker (all at once) until each answers, and records
// how long after the worker's return the last of them took; a model that does not answer within a
// minute is a breach.
func (s *workerSet) comeBack(ctx context.Context, client *http.Client, url, killed string, models map[string][]string, st *workerStats) []string {
	_, up := s.window()
	if up.IsZero() {
		return []string{fmt.Sprintf("worker %s was not started again", killed)}
	}
	var mu sync.Mutex // guards v
	var v []string
	var wg sync.WaitGroup
	deadline := time.Now().Add(time.Minute)
	for id, ws := range models {
		if !slices.Contains(ws, killed) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				r := harness.Do(ctx, client, harness.Request{URL: url, Body: harness.ChatBody(id, false, 4, n)})
				if r.OK() {
					return
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					mu.Lock()
					v = append(v, fmt.Sprintf("%s (workers %v) did not answer again after worker %s came back: status %d %s %v", id, ws, killed, r.Status, r.Code, r.Err))
					mu.Unlock()
					return
				}
				select { // the model's retry time: nothing to wait on from here but its answer
				case <-time.After(500 * time.Millisecond):
				case <-ctx.Done():
				}
			}
		}()
	}
	wg.Wait()
	st.backAfter = time.Since(up)
	sort.Strings(v)
	return v
}

// waitInUse returns once a request of a model using worker w holds a lease (so killing w cuts it
// mid-answer), or after d.
func waitInUse(eng *engine.Engine, models map[string][]string, w string, d time.Duration) {
	ch, cancel := eng.Subscribe()
	defer cancel()
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return
			}
			if ev.Kind == engine.EventLease && ev.Active > 0 && slices.Contains(models[ev.Model], w) {
				return
			}
		case <-t.C:
			return
		}
	}
}
