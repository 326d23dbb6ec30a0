package engine

import (
	"math"
	"strconv"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/sched"
)

// model is one catalog model's runtime state. Every field is guarded by Engine.mu.
type model struct {
	id      string
	entry   catalog.Model
	set     Settings
	removed bool // gone from the catalog; forgotten once unloaded

	state    State
	gen      uint64 // generation of the current child
	child    Proc
	spawning bool // child.Start is running outside the lock
	stopReq  bool // stop as soon as the child is registered
	forceReq bool
	pid      int
	port     int    // TCP port of the child (Windows); 0 on a socket
	socket   string // unix socket path of the child
	base     string // the child's base URL once ready (child.Addr.URL)
	args     []string
	binary   string // the llama-server the current child runs
	progress float64

	leases   int
	lastUsed time.Time
	draining bool
	drainWhy string
	drainFor string // the model whose queued requests a fair-wait drain is for; "" when asked for
	pinned   bool
	pinSet   bool // pinned was set at run time and overrides the configuration

	held     sched.Mem // what it holds now: measured while running, expected while loading or waking
	plan     sched.Mem // the need this run was started with
	measured sched.Mem // last measurement, zero if none
	peak     sched.Mem // largest measurement of this run while loaded, per dimension
	learned  sched.Mem // footprint learned in an earlier run, zero if none

	exitCode  *int
	errMsg    string
	logTail   []string
	failures  int
	nextRetry time.Time
	readyAt   time.Time

	stopped []chan struct{} // closed when the current child is gone
}

// need is what a load of m takes: the learned footprint when there is one, else the estimate.
func (e *Engine) need(m *model) sched.Mem {
	est := sched.Mem{RAM: m.entry.Estimate.RAM, VRAM: m.entry.Estimate.VRAM}
	if m.learned != (sched.Mem{}) {
		est = m.learned
	}
	if !e.sysOK || len(e.sys.GPUs) == 0 || e.sys.Unified {
		est = sched.Mem{RAM: est.RAM + est.VRAM}
	}
	if est.RAM <= 0 {
		est.RAM = m.entry.SizeBytes
	}
	return est
}

// status snapshots m.
func (e *Engine) status(m *model) ModelStatus {
	s := ModelStatus{
		ID:            m.id,
		Aliases:       append([]string(nil), m.entry.Aliases...),
		State:         m.state,
		Active:        m.leases,
		Queued:        e.queued(m.id),
		Draining:      m.draining,
		Pinned:        m.pinned,
		EstimateBytes: e.need(m).RAM + e.need(m).VRAM,
		LearnedBytes:  m.learned.RAM + m.learned.VRAM,
		LastUsed:      m.lastUsed,
		PID:           m.pid,
		Port:          m.port,
		Socket:        m.socket,
		Error:         m.errMsg,
		NextRetry:     m.nextRetry,
		Progress:      m.progress,
		Args:          append([]string(nil), m.args...),
		Path:          m.entry.Path,
	}
	if m.state.Running() {
		s.Binary = m.binary
	}
	if m.state.Running() {
		s.MemoryBytes = m.measured.RAM + m.measured.VRAM
	}
	if m.exitCode != nil {
		c := *m.exitCode
		s.ExitCode = &c
	}
	if due, ok := e.unloadDue(m); ok {
		s.UnloadAt = due
	}
	return s
}

// unloadDue says when the idle timer will stop m (never while a request is queued for it).
func (e *Engine) unloadDue(m *model) (time.Time, bool) {
	v, ok := e.view(m, e.queued(m.id))
	if !ok {
		return time.Time{}, false
	}
	return sched.UnloadDue(v, m.set.IdleUnload)
}

// args is the llama-server command line for m, without --host and --port.
func (e *Engine) args(m *model) []string {
	a := []string{"-m", m.entry.Path}
	if m.entry.Mmproj != "" {
		a = append(a, "--mmproj", m.entry.Mmproj)
	}
	a = append(a, "--alias", m.id)
	a = append(a, "-c", strconv.Itoa(max(m.set.CtxSize, 0))) // 0: the model's trained context
	if m.set.IdleSleep > 0 {
		secs := int(m.set.IdleSleep.Round(time.Second) / time.Second)
		if secs < 1 {
			secs = 1
		}
		a = append(a, "--sleep-idle-seconds", strconv.Itoa(secs))
	}
	return append(a, m.set.Args...)
}

// views is the scheduling snapshot: every model holding or about to hold a process.
func (e *Engine) views() []sched.View {
	queued := map[string]int{}
	for _, w := range e.queue {
		queued[w.model]++
	}
	out := make([]sched.View, 0, len(e.models))
	for _, m := range e.models {
		if v, ok := e.view(m, queued[m.id]); ok {
			out = append(out, v)
		}
	}
	return out
}

// view is m as the scheduler sees it, if it holds or is about to hold a process.
func (e *Engine) view(m *model, queued int) (sched.View, bool) {
	v := sched.View{ID: m.id, Leases: m.leases, Pinned: m.pinned, Draining: m.draining, LastUsed: m.lastUsed, Held: m.held, Queued: queued}
	switch m.state {
	case StateLoading:
		v.Phase = sched.Loading
	case StateLoaded:
		v.Phase = sched.Loaded
	case StateSleeping:
		v.Phase = sched.Sleeping
	case StateStopping:
		v.Phase = sched.Stopping
	default:
		return v, false
	}
	return v, true
}

// room is the memory budget for all models together, and the slot cap.
func (e *Engine) room() sched.Room {
	var ours sched.Mem
	for _, m := range e.models {
		if m.state.Running() {
			ours = ours.Add(m.measured)
		}
	}
	r := sched.Room{MaxLoaded: e.o.MaxLoaded}
	if e.sysOK {
		r.Budget.RAM = e.sys.Available + ours.RAM - e.o.Reserve
		if !e.sys.Unified {
			_, free := e.sys.VRAM()
			r.Budget.VRAM = free + ours.VRAM
		}
	}
	switch {
	case e.o.MemoryLimit > 0 && (!e.sysOK || e.o.MemoryLimit < r.Budget.RAM):
		r.Budget.RAM = e.o.MemoryLimit
	case !e.sysOK && e.o.MemoryLimit == 0:
		// No measurement and no limit: count slots only rather than refuse everything.
		r.Budget.RAM = math.MaxInt64 / 4
	}
	if r.Budget.RAM < 0 {
		r.Budget.RAM = 0
	}
	r.Ceiling = e.ceiling(r.Budget)
	return r
}

// ceiling is the most the budget can ever be: the configured limit, else all RAM (and VRAM) minus the
// reserve. A model over it gets TooLargeError at once; one that is only over the current budget waits.
func (e *Engine) ceiling(budget sched.Mem) sched.Mem {
	c := sched.Mem{RAM: e.o.MemoryLimit}
	if e.sysOK {
		if total := e.sys.Total - e.o.Reserve; c.RAM == 0 || total < c.RAM {
			c.RAM = total
		}
		if !e.sys.Unified {
			c.VRAM, _ = e.sys.VRAM()
		}
	}
	if c.RAM < budget.RAM {
		c.RAM = budget.RAM
	}
	if c.VRAM < budget.VRAM {
		c.VRAM = budget.VRAM
	}
	return c
}

// queued counts waiters for id.
func (e *Engine) queued(id string) int {
	n := 0
	for _, w := range e.queue {
		if w.model == id {
			n++
		}
	}
	return n
}
