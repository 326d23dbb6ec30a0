package engine

import (
	"maps"
	"math"
	"net/url"
	"slices"
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
	stopReq  bool // stop as soon as the child is registered
	forceReq bool
	pid      int
	port     int      // TCP port of the child (Windows); 0 on a socket
	socket   string   // unix socket path of the child
	base     *url.URL // the child's base URL once ready (child.Addr.URL); shared by its leases, never changed
	args     []string // the command line that keys its learned footprint
	fit      []string // added to args for this child: its device share (fitArgs)
	workers  []string // the workers this child uses (Settings.Workers when it started)
	rpc      []string // added to args for this child: --rpc with its workers' links, once checked
	lost     error    // the lost worker link that ended child generation lostGen; nil if none
	lostGen  uint64
	failedAt time.Time // when it last failed
	binary   string    // the llama-server the current child runs
	progress float64

	leases     int
	lastUsed   time.Time
	draining   bool
	drainCause Cause  // why it drains: asked for, or a fair wait
	drainFor   string // the model whose queued requests a fair-wait drain is for; "" when asked for
	pinned     bool
	pinSet     bool // pinned was set at run time and overrides the configuration
	// keepAlive, when set, replaces the idle-unload time for this child (an Ollama request's
	// keep_alive): negative never unloads it, 0 unloads it once idle. Cleared when the child stops.
	keepAlive *time.Duration

	held     sched.Mem // what it holds now: measured while running, expected while loading or waking
	plan     sched.Mem // the need this run was started with
	measured sched.Mem // last measurement, zero if none
	peak     sched.Mem // largest measurement of this run while loaded, per dimension
	learned  footprint // learned in an earlier run (RAM, and each device by name), zero if none
	devices  sched.Mem // GPU memory per device this run, from the child's own buffer report; zero if none

	exitCode  *int
	errMsg    string
	logTail   []string
	failures  int
	nextRetry time.Time

	stopped []chan struct{} // closed when the current child is gone

	wait *WaitReason // why its queued requests wait, as reconcile last decided; nil when none waits
}

// need is what a load of m takes: the learned footprint when there is one (per device, as the
// child reported its buffers), else the estimate, its GPU part split over the devices by the layers
// the child offloads. Without a GPU it is all RAM; on unified memory the GPU's part is RAM too, and
// also counts against the GPU's working-set limit. Called with mu held.
func (e *Engine) need(m *model) sched.Mem {
	var est sched.Mem
	layers := m.entry.Estimate.GPULayers
	switch {
	case len(m.learned.Devices) > 0:
		est = e.onDevices(m.learned.RAM, m.learned.Devices)
	case !m.learned.zero():
		est = sched.Split(m.learned.RAM, m.learned.VRAM, layers, e.sharesFor(m))
	default:
		est = sched.Split(m.entry.Estimate.RAM, m.entry.Estimate.VRAM, layers, e.sharesFor(m))
		// A child that cannot correct the estimate itself (the user fixed the offload, or the
		// llama-server takes no --fit-target) gets each device's share padded by 1/8: the
		// catalog's estimate runs below llama.cpp's buffers (compute buffers, alignment), by 11%
		// for a small model on Vulkan, and a child given -ngl takes what it takes. Once the model
		// has loaded, its learned footprint replaces the estimate.
		if !e.fitted(m) {
			for i, n := range est.GPU {
				est.GPU[i] = n + n/8
			}
		}
	}
	if e.sys.Unified {
		for i := range e.localGPUs() {
			est.RAM += est.GPU[i] // the workers' devices are theirs
		}
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
		EstimateBytes: e.shown(e.need(m)),
		LearnedBytes:  m.learned.RAM + m.learned.VRAM,
		LearnedGPU:    maps.Clone(m.learned.Devices),
		LastUsed:      m.lastUsed,
		PID:           m.pid,
		Port:          m.port,
		Socket:        m.socket,
		Error:         m.errMsg,
		NextRetry:     m.nextRetry,
		Progress:      m.progress,
		Args:          append(append(slices.Clone(m.args), m.fit...), m.rpc...),
		Workers:       slices.Clone(m.set.Workers),
		Path:          m.entry.Path,
	}
	if m.state.Running() {
		s.Binary = m.binary
		s.MemoryBytes = e.shown(m.measured)
		s.HeldGPU = e.deviceBytes(m.held, false)
	}
	if m.exitCode != nil {
		s.ExitCode = new(*m.exitCode)
	}
	if m.wait != nil && s.Queued > 0 {
		s.Wait = m.wait.clone()
	}
	s.UnloadAt, _ = sched.UnloadDue(e.schedModel(m)) // zero when none: never while a request is queued for it
	return s
}

// unloadAfter is m's idle-unload time: its keep-alive when set (0: as soon as it is idle, negative:
// never), else the configured one (<=0: never).
func (m *model) unloadAfter() time.Duration {
	if m.keepAlive == nil {
		return m.set.IdleUnload
	}
	if *m.keepAlive == 0 {
		return time.Nanosecond // as soon as it is idle
	}
	return max(*m.keepAlive, 0)
}

// args is the llama-server command line for m, without --host and --port.
func (e *Engine) args(m *model) []string {
	a := []string{"-m", m.entry.Path}
	if m.entry.Mmproj != "" {
		a = append(a, "--mmproj", m.entry.Mmproj)
	}
	a = append(a, "--alias", m.id)
	a = append(a, "-c", strconv.Itoa(max(m.set.CtxSize, 0))) // 0: the model's trained context
	switch {
	case slices.ContainsFunc(m.set.Args, isEmbeddingFlag):
	case m.entry.Rerank:
		a = append(a, "--reranking") // a reranker: llama-server serves /v1/rerank only with it (501 otherwise)
	case m.entry.Pooling:
		a = append(a, "--embeddings") // an embedding model: llama-server serves /v1/embeddings only with it
	}
	if m.set.IdleSleep > 0 {
		secs := max(int(m.set.IdleSleep.Round(time.Second)/time.Second), 1)
		a = append(a, "--sleep-idle-seconds", strconv.Itoa(secs))
	}
	return append(a, m.set.Args...)
}

// isEmbeddingFlag is a flag of llama-server's that starts it for embeddings or reranking.
func isEmbeddingFlag(s string) bool {
	return s == "--embedding" || s == "--embeddings" || s == "--reranking" || s == "--rerank"
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
	}
	for i, g := range e.gpus() {
		// What the device has free, plus what our children hold on it. On unified memory the
		// working-set limit is the device's whole budget: other programs' use shows in RAM.
		b, c := max(g.Free+ours.GPU[i], 0), g.Total
		if e.sys.Unified {
			b = g.Total
		}
		if l := e.deviceLimit(g, i); l > 0 {
			b, c = min(b, l), min(c, l)
		}
		r.Budget.GPU[i], r.Ceiling.GPU[i] = b, c
	}
	switch {
	case e.o.MemoryLimit > 0 && (!e.sysOK || e.o.MemoryLimit < r.Budget.RAM):
		r.Budget.RAM = e.o.MemoryLimit
	case !e.sysOK && e.o.MemoryLimit == 0:
		// No measurement and no limit: count slots only rather than refuse everything.
		r.Budget.RAM = math.MaxInt64 / 4
	}
	r.Budget.RAM = max(r.Budget.RAM, 0)
	// The ceiling is the most the budget can ever be: the configured limit, else all RAM minus the
	// reserve, and each device's memory (or its configured limit). A model over it gets
	// TooLargeError at once; one that is only over the current budget waits.
	r.Ceiling.RAM = e.o.MemoryLimit
	if total := e.sys.Total - e.o.Reserve; e.sysOK && (r.Ceiling.RAM == 0 || total < r.Ceiling.RAM) {
		r.Ceiling.RAM = total
	}
	r.Ceiling = r.Ceiling.Max(r.Budget)
	return r
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
