package engine

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llamatray/llamatray/router/sched"
)

// State is the lifecycle state of one model.
type State string

// The model states. unloaded → loading → loaded ⇄ sleeping → stopping → unloaded, plus failed.
const (
	StateUnloaded State = "unloaded"
	StateLoading  State = "loading"
	StateLoaded   State = "loaded"
	StateSleeping State = "sleeping"
	StateStopping State = "stopping"
	StateFailed   State = "failed"
)

// Running reports whether a child process exists in this state.
func (s State) Running() bool {
	return s == StateLoading || s == StateLoaded || s == StateSleeping || s == StateStopping
}

// ModelStatus is a snapshot of one model, safe to keep and read after the call.
type ModelStatus struct {
	ID            string
	Aliases       []string
	State         State
	Active        int              // leases held by in-flight requests
	Queued        int              // requests waiting for this model
	Draining      bool             // refuses new leases; stops when Active reaches 0
	Pinned        bool             // never evicted by pressure or timers
	MemoryBytes   int64            // what the child holds now (measured RSS), 0 when not running
	EstimateBytes int64            // what a load needs: learned footprint if known, else the estimate
	LearnedBytes  int64            // measured footprint of an earlier load, 0 if never measured
	LearnedGPU    map[string]int64 // of LearnedBytes, what it held on each GPU device (from the child's buffer report), by device name
	HeldGPU       map[string]int64 // running: what it holds, or is reserved to hold, on each GPU device now
	LastUsed      time.Time        // last lease taken or released
	PID           int
	Port          int       // TCP port of the child (Windows); 0 on a unix socket
	Socket        string    // unix socket path of the child (Linux, macOS)
	ExitCode      *int      // exit code of the last child, when it ended
	Error         string    // why the model is failed
	NextRetry     time.Time // failed: when the next load may start
	Progress      float64   // loading: 0..1 when the child reports it
	UnloadAt      time.Time // idle unload due at, zero if none
	Args          []string  // the child's command line
	Workers       []string  // the workers it is spread over ([models."ID"] workers)
	Path          string
	Binary        string      // the llama-server the running child was started from, "" when none runs
	Wait          *WaitReason // why its queued requests wait; nil when none is queued
}

// WaitKind names why a model's queued requests wait (sched.Plan decides it).
type WaitKind = sched.WaitKind

// The reasons a queued request waits, as the scheduler last decided them.
const (
	WaitLoading  = sched.WaitLoading  // its load is in progress; the requests are served once it is ready
	WaitStopping = sched.WaitStopping // its last child is stopping; it loads again once that is gone
	WaitDraining = sched.WaitDraining // it is unloading once its own requests end (asked for, or for a queued load); then it loads again
	WaitMemory   = sched.WaitMemory   // memory is being freed for it: the Victims are stopping
	WaitBusy     = sched.WaitBusy     // every model that could make room has requests in flight (Holders); after fair_wait the Victims drain for it
	WaitBehind   = sched.WaitBehind   // first come, first served: an earlier queued load (Behind) is blocked, so this one waits its turn
	WaitWorker   = sched.WaitWorker   // a worker it needs (Worker) is used by another model (Holders); Victims: that model, stopping for it
)

// WaitReason is why a model's queued requests wait, computed where the scheduler decides.
type WaitReason struct {
	Kind      WaitKind
	Position  int              // place in the queue of models, 1 = first in line
	Since     time.Time        // when its first waiting request was queued
	Need      int64            // memory its load needs (shown total)
	NeedGPU   map[string]int64 // of Need, per GPU device by name
	Free      int64            // memory free for models now, after what is held and booked (shown total)
	FreeGPU   map[string]int64 // free now on each GPU device by name
	Victims   []WaitModel      // models being unloaded for it: stopping now (memory), or draining until their requests end (busy)
	Holders   []WaitModel      // busy, behind: the models holding the memory it needs that cannot be unloaded now
	BusySince time.Time        // busy: since when it has been blocked
	DrainAt   time.Time        // busy: when fair_wait is up and busy models start draining for it; zero once they do, or when draining cannot help
	MaxLoaded int              // busy: the max_loaded cap is what is full (memory would fit); 0 otherwise
	Behind    string           // behind: the blocked model ahead of it
	Worker    string           // worker: the worker it waits for, used by Holders[0]
	// Turn: it waits its turn while other models serve, and the router's own steps end the wait (a
	// load, stop or drain under way for it, or busy models that drain for it at fair_wait): its
	// queue deadline does not end it, each passing deadline gives it fair_wait more.
	Turn bool
}

// WaitModel is another model as a wait reason names it.
type WaitModel struct {
	ID     string
	State  State
	Active int  // requests in flight on it
	Pinned bool // never unloaded for another model
}

// Event is one change of a model's state, lease count or queue. Its fields carry the data;
// Message is a sentence for people only (the /models/events stream shows it), never to be parsed.
type Event struct {
	Seq      uint64
	Time     time.Time
	Model    string
	Kind     EventKind
	State    State
	Active   int
	Queued   int      // EventQueue: requests waiting for Model now
	Wait     WaitKind // EventQueue: the new reason they wait, when the event tells one ("" when only their number changed)
	Position int      // EventQueue with Wait: the model's place in line, 1 = first
	Cause    Cause    // EventState, EventPressure: why the model stops, drains, fails, wakes…; "" for a plain change
	For      string   // CauseEvicted, CauseFairWait: the model whose queued requests it is done for
	Progress float64  // CauseProgress: how far its load is, 0..1
	Pinned   bool     // CausePinned: whether it is pinned now
	Models   int      // EventCatalog: how many models the catalog has
	Message  string
}

// EventKind is what an Event is about.
type EventKind string

// The kinds of events.
const (
	EventState    EventKind = "state"    // a model's state changed, or it started or stopped draining, was pinned, or made progress
	EventLease    EventKind = "lease"    // a lease was taken or given back (Active)
	EventQueue    EventKind = "queue"    // a model's queue changed (Queued), or the reason it waits (Wait, Position)
	EventCatalog  EventKind = "catalog"  // the catalog was taken in (Models)
	EventPressure EventKind = "pressure" // a model is unloaded under memory pressure
	EventResync   EventKind = "resync"   // events were lost: re-read the snapshot
)

// Cause is why a model changed, as an event tells it.
type Cause string

// The causes of events.
const (
	CauseIdle      Cause = "idle"       // stopping: its idle-unload time passed
	CauseEvicted   Cause = "evicted"    // stopping: idle, it makes room for For
	CauseFairWait  Cause = "fair_wait"  // draining (then stopping): for For, whose load waited fair_wait behind it
	CauseAsked     Cause = "asked"      // draining (then stopping): an unload was asked for
	CauseForced    Cause = "forced"     // stopping: a forced unload
	CauseOverLimit Cause = "over_limit" // stopping: idle, over a lowered memory limit or max_loaded
	CausePressure  Cause = "pressure"   // stopping, and its EventPressure: other programs need the memory
	CauseShutdown  Cause = "shutdown"   // stopping: Llamatray is shutting down
	CauseDrainOff  Cause = "drain_off"  // a fair-wait drain is called off: the requests it was for are gone
	CauseFailed    Cause = "failed"     // failed: its load failed or its child crashed (Message says how)
	CauseWoke      Cause = "woke"       // loaded again after sleeping
	CauseProgress  Cause = "progress"   // loading: Progress moved
	CausePinned    Cause = "pinned"     // Pinned changed
)

// causeMessages are the sentences the stream shows for a change of cause, but for those that name
// the model they are done for.
var causeMessages = map[Cause]string{CauseIdle: "idle", CauseAsked: "unload requested", CauseForced: "forced unload",
	CauseOverLimit: "over the memory limit or max_loaded", CausePressure: "memory pressure", CauseShutdown: "shutting down",
	CauseDrainOff: "drain called off", CauseWoke: "woke"}

// message is the sentence the stream shows for a change of cause c (forModel: its For).
func (c Cause) message(forModel string) string {
	switch c {
	case CauseEvicted:
		return "evicted for " + forModel
	case CauseFairWait:
		return "draining for " + forModel + " (fair wait)"
	}
	return cmp.Or(causeMessages[c], string(c))
}

// Budget describes the memory Llamatray may use for models.
type Budget struct {
	Limit           int64 // configured limit, or derived from the machine
	Configured      bool  // Limit came from the configuration
	Reserve         int64
	Used            int64 // reserved by models: what each holds, or what its run was planned with when that is more
	Measured        int64 // what models really hold now (measured RSS and VRAM)
	ConfiguredLimit int64 // memory_limit as configured, 0 = automatic
	Free            int64 // Limit - Used, never below 0
	SystemTotal     int64
	SystemAvailable int64
	MaxLoaded       int
	Loaded          int
	Devices         []DeviceBudget // each GPU's own budget, in the engine's device order
}

// DeviceBudget is one GPU device's budget: models on it never hold more than Limit together.
type DeviceBudget struct {
	Name        string // llama-server's name (CUDA0, Vulkan0, MTL0), else GPU<i>
	Description string
	Total       int64 // the device's memory (Apple silicon: the Metal working-set limit)
	Limit       int64 // what models may hold on it now: free plus ours, at most its configured limit
	Ceiling     int64 // the most Limit can be
	Used        int64 // reserved by models on it
	Measured    int64 // what models report they hold on it
}

// Lease is one in-flight request's hold on a running model. Release it exactly once; extra calls are no-ops.
type Lease struct {
	Model  string
	URL    *url.URL      // base URL of the child (child.Addr.URL); shared by every lease of the child: never change it
	Socket string        // the child's unix socket, which the URL's connections must dial; "" on TCP
	Waited time.Duration // time spent queued or loading

	done    atomic.Bool // Release was called
	eng     *Engine     // the engine that granted it
	m       *model      // its model, for eng
	gen     uint64      // the child's generation and workers when granted, for Lost
	workers []string
}

// Release gives the lease back. It is safe to call more than once.
func (l *Lease) Release() {
	if l == nil || l.done.Swap(true) {
		return
	}
	l.eng.release(l.m)
}

// Lost is why the child serving the lease went away when that was a worker's lost link (a
// *WorkerError naming it), so a request cut off by it can say so; nil otherwise.
func (l *Lease) Lost() error {
	if l == nil {
		return nil
	}
	return l.eng.diagnose(l.Model, l.gen, l.workers)
}

// ErrClosed is returned once the engine is shutting down.
var ErrClosed = errors.New("llamatray is shutting down")

// UnknownModelError says no catalog entry or alias has this name.
type UnknownModelError struct {
	Name        string
	Suggestions []string
}

func (e *UnknownModelError) Error() string {
	msg := fmt.Sprintf("model %q not found", e.Name)
	if len(e.Suggestions) > 0 {
		msg += "; did you mean " + strings.Join(e.Suggestions, ", ") + "?"
	}
	return msg
}

// QueueTimeoutError says a request waited its whole deadline for memory or a slot that nothing the
// router does would free: not while it waited its turn (WaitReason.Turn).
type QueueTimeoutError struct {
	Model      string
	Waited     time.Duration
	RetryAfter time.Duration
	Wait       *WaitReason // why it waited when its deadline passed; nil when no reason was given yet
}

func (e *QueueTimeoutError) Error() string {
	msg := fmt.Sprintf("model %q: no memory or slot became free within %s", e.Model, e.Waited.Round(time.Millisecond))
	w := e.Wait
	if w == nil {
		return msg + " (every loaded model is busy)"
	}
	msg += fmt.Sprintf(" (waiting: %s", w.Kind)
	var held []string
	for _, h := range w.Holders {
		if h.Pinned {
			held = append(held, h.ID+", pinned")
		} else {
			held = append(held, h.ID)
		}
	}
	if len(held) > 0 {
		msg += "; held by " + strings.Join(held, "; ")
	}
	if w.Kind == WaitBusy && w.DrainAt.IsZero() && len(w.Victims) == 0 {
		msg += "; none of them is drained for it (pinned, or fair_wait is off)"
	}
	return msg + ")"
}

// LoadError says a model's child failed to load or crashed.
type LoadError struct {
	Model    string
	ExitCode *int
	Reason   string
	LogTail  []string
	RetryAt  time.Time
	Err      error
}

func (e *LoadError) Error() string {
	msg := fmt.Sprintf("model %q failed to load: %s", e.Model, e.Reason)
	if e.ExitCode != nil {
		msg += fmt.Sprintf(" (exit code %d)", *e.ExitCode)
	}
	return msg
}

func (e *LoadError) Unwrap() error { return e.Err }

// TooLargeError says a model cannot fit even with every other model unloaded.
type TooLargeError struct {
	Model  string
	Need   int64
	Budget int64
	Device string // the GPU device it does not fit on; "" for RAM
}

func (e *TooLargeError) Error() string {
	if e.Device != "" {
		return fmt.Sprintf("model %q needs %d MiB on %s but that device's budget is %d MiB even with every other model unloaded (offload fewer layers, or raise its device_memory_limit)", e.Model, e.Need>>20, e.Device, e.Budget>>20)
	}
	return fmt.Sprintf("model %q needs %d MiB but the memory budget is %d MiB even with every other model unloaded (raise memory_limit or lower memory_reserve to try anyway)", e.Model, e.Need>>20, e.Budget>>20)
}

// NoServerError says no llama-server binary was found.
type NoServerError struct{ Hint string }

func (e *NoServerError) Error() string {
	return "llama-server not found: " + e.Hint
}
