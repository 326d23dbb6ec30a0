package sched

import (
	"slices"
	"time"
)

// State is the snapshot Plan decides over: every model the engine knows, the queue of waiting
// requests in arrival order, the budget and the configured limits. It is a value: Plan changes
// nothing in it.
type State struct {
	Now      time.Time
	Room     Room          // the budget now (memory other programs use moves it), its ceiling, max_loaded
	Limits   Room          // the configured limits only (memory_limit, device limits, max_loaded): what a lowered limit stops idle models for
	FairWait time.Duration // how long a blocked load waits before busy models drain for it; <= 0: off, they never do
	// Linger is how long a loaded model that went idle while a load waited is kept for its clients'
	// next requests before it is evicted for that load (5.7, never past FairWait; 0: off).
	Linger time.Duration
	// Devices is how many GPU devices there are; DeviceFree is what each had free at the last sample
	// plus what our children measured there (what a starting child that measures free memory sees,
	// before what other children hold or are promised is taken off).
	Devices    int
	DeviceFree [MaxGPUs]int64
	Models     []Model  // every model, in a stable order (the engine gives them by ID)
	Queue      []Waiter // the waiting requests, first come first
}

// Model is one model in a State.
type Model struct {
	ID       string
	Phase    Phase // Unloaded and Failed: no process
	Removed  bool  // gone from the catalog: its waiters fail
	Refused  bool  // its settings refuse every load (a missing draft): its waiters fail unless it runs
	Leases   int
	Pinned   bool
	Draining bool
	DrainFor string // the model a fair-wait drain is for; "" when the drain was asked for
	LastUsed time.Time
	Held     Mem // what it holds now (measured), or is expected to hold (loading, waking)
	Plan     Mem // loading: the need its run was started with
	Need     Mem // what a load of it takes
	RetryAt  time.Time
	// UnloadAfter is its idle-unload time (<=0: never).
	UnloadAfter time.Duration
	// Measures is whether its child measures the devices' free memory as it starts (llama.cpp's
	// --fit): such a load waits for a neighbour's load on a nearly full device.
	Measures bool
	// BusySince is when it became blocked behind busy models, if its last reason was that; else zero.
	BusySince time.Time
	// Workers are the other machines its child uses (llama.cpp RPC, [models."ID"] workers): each
	// serves one model at a time.
	Workers []string
	// Queued is how many requests wait for it: Plan counts them from State.Queue; for Fit and Drain,
	// those queued ahead of self. A model with requests queued is never a victim, nor unloaded idle.
	Queued int
	// Serving: idle, but it served while the load being planned waited, and may serve again (Plan
	// 5.7 e, set by Plan only): no victim before FairWait.
	Serving bool
}

// Waiter is one waiting request.
type Waiter struct {
	Model string
	Enq   time.Time
	Late  bool // its deadline passed while its model was loading: the load answers it, or it times out
}

// Op is what a Step does.
type Op int

// The steps of a plan.
const (
	OpTimeOut Op = iota // Queue[Waiter] times out: its deadline passed during a load that ended without it
	OpUndrain           // Model's fair-wait drain is called off: the requests it was for are gone
	OpStop              // Model stops (Why; For: the model an eviction is for)
	OpDrain             // Model takes no new leases and stops once its last ends, for For's queued requests
	OpStart             // Model starts loading
	OpWake              // sleeping Model is woken: its waiters get leases and its weights come back
	OpAdmit             // loaded Model's waiters get leases
	OpFail              // Model's waiters fail (Why)
	OpWait              // Model's waiters wait, for Wait's reason
)

// Why is the reason of a stop or a failure.
type Why int

// The reasons of OpStop and OpFail.
const (
	StopDrained   Why = iota + 1 // its drain (asked for, or a fair wait) is done: no lease is left
	StopOverLimit                // idle, and a lowered memory limit or max_loaded leaves no room for it
	StopEvicted                  // idle, stopped to make room for For
	StopIdle                     // its idle-unload time passed
	FailRemoved                  // the model left the catalog
	FailBackoff                  // its last load failed and the retry backoff has not passed
	FailTooLarge                 // it can never fit, even with every model gone (Need says how much)
	FailRefused                  // its settings refuse its loads, and it has no process
)

// Step is one thing to do, in order.
type Step struct {
	Op     Op
	Model  string
	Waiter int    // OpTimeOut: the index in State.Queue
	Why    Why    // OpStop, OpFail
	For    string // OpStop (StopEvicted), OpDrain: the model it is done for
	Need   Mem    // OpStop (StopEvicted): what For needs; OpFail (FailTooLarge): what the model needs
	Wait   *Wait  // OpWait
}

// WaitKind names why a model's queued requests wait.
type WaitKind string

// The reasons a queued request waits.
const (
	WaitLoading  WaitKind = "loading"  // its load is in progress; the requests are served once it is ready
	WaitStopping WaitKind = "stopping" // its last child is stopping; it loads again once that is gone
	WaitDraining WaitKind = "draining" // it is unloading once its own requests end (asked for, or for a queued load); then it loads again
	WaitMemory   WaitKind = "memory"   // memory is being freed for it: the Victims are stopping
	WaitBusy     WaitKind = "busy"     // every model that could make room has requests in flight (Holders); after fair_wait the Victims drain for it
	WaitBehind   WaitKind = "behind"   // first come, first served: an earlier queued load (Behind) is blocked, so this one waits its turn
	WaitWorker   WaitKind = "worker"   // a worker it needs (Worker) is used by another model (Holders[0]); Victims: that model, idle, stopping for it
)

// Wait is why a model's queued requests wait, as Plan decided it.
type Wait struct {
	Kind      WaitKind
	Position  int       // place in the queue of models, 1 = first in line
	Since     time.Time // when its first waiting request was queued
	Need      Mem       // what its load needs
	Free      Mem       // free for models after what is held and booked
	Victims   []string  // stopping for it (memory), or draining for it (busy)
	Holders   []string  // busy: the models holding memory that cannot be unloaded now
	BusySince time.Time // busy: since when it is blocked
	DrainAt   time.Time // busy: when fair_wait is up and draining can help; zero once they drain, or when it cannot help
	MaxLoaded int       // busy: the max_loaded cap is what is full (memory would fit)
	Behind    string    // behind: the model ahead of it that it waits for
	Worker    string    // worker: the worker it waits for
	// Turn is whether the plan's own steps end the wait: its load, a stop or drain for it under way,
	// busy models that drain for it once fair_wait is up, or a load ahead of it that does. Such a
	// request waits its turn while others are served: its queue deadline does not end it.
	Turn bool
}

// Plan makes every decision s calls for and returns the steps, in the order they are to be carried
// out, and when to plan again (zero: no timer). The steps are decided on a private copy of s that
// each step changes as carrying it out will (a start makes a model loading, an admission takes its
// waiters out of the queue), so that every later decision sees the earlier ones.
//
//  1. Requests whose deadline passed during a load that ended without them time out.
//  2. Fair-wait drains whose requests are all gone are called off.
//  3. Draining models with no lease left stop.
//  4. Idle models over the configured memory limit or max_loaded stop (Excess), least recently used first.
//  5. The queue is served in the order of each model's first waiter (a loaded model's waiters get
//     leases wherever it stands, 5.2). Each wait says whether it is a Turn: the plan's own steps end it.
//     5.1 a removed model's waiters fail, and so do those of a model without a process whose
//     settings refuse its loads;
//     5.2 a loaded model's waiters get leases;
//     5.3 a loading, stopping or draining model waits for that to end;
//     5.4 a failed model within its backoff fails its waiters;
//     5.5 once a load is blocked, every later load waits behind it (strict FIFO);
//     5.6 a load that needs a worker another model uses (or a model queued ahead of it is to use)
//     waits for it, with the worker and that model as its reason; when that model is idle and
//     may be evicted (loaded or sleeping, no lease, not pinned, nothing queued for it), it stops
//     for the load, as for memory. A worker serves one model at a time. Such a wait does not
//     block later loads that need other workers or none; a load that goes on claims its workers,
//     and one that waits claims those of its workers no one holds, so a later load for them waits
//     behind it; one too large for the ceiling goes on to be refused;
//     5.7 else Fit decides over the snapshot, loads decided ahead of it booked, the queued mark kept
//     only on the models queued ahead of it (a load queued first may evict a sleeper asked for later):
//     a. too large for the ceiling: its waiters fail;
//     b. fits and sleeping: it is woken and its waiters get leases;
//     c. fits, but its child would measure a nearly full device while another loads or wakes
//     there: it waits behind that one, and blocks the later loads;
//     d. fits: it starts;
//     e. fits once idle victims stop: they stop, its need is booked; a loaded model that served a
//     request after this load's first waiter came, Linger ago at most, is no victim while that
//     waiter has waited less than FairWait (it is serving: its clients send back to back, and a
//     swap now would have them wait for a load of their own), so it blocks the load as in g;
//     f. fits once models already stopping are gone: it waits, its need booked;
//     g. blocked behind busy models: it blocks the later loads; once its first waiter has waited
//     FairWait, the busy models Drain picks drain for it (FairWait <= 0: never).
//     Each model that still waits gets its reason here, from the decision made for it.
//  6. Idle models whose idle-unload time passed stop; the next such time arms the timer.
func Plan(s State) ([]Step, time.Time) {
	p := newPlanner(s)
	p.timeOutLate() // 1
	p.undrain()     // 2
	p.stopDrained() // 3
	p.stopExcess()  // 4
	p.serveQueue()  // 5
	p.unloadIdle()  // 6
	return p.steps, p.next
}

// planner is Plan's private copy of the state, changed by each step it decides.
type planner struct {
	s      State
	models []*Model
	byID   map[string]*Model
	queue  []Waiter
	gone   []bool // queue[i] left the queue
	steps  []Step
	next   time.Time
}

func newPlanner(s State) *planner {
	p := &planner{s: s, byID: make(map[string]*Model, len(s.Models)), queue: slices.Clone(s.Queue), gone: make([]bool, len(s.Queue))}
	ms := slices.Clone(s.Models) // the planner's copy, which its steps change
	p.models = make([]*Model, len(ms))
	for i := range ms {
		p.models[i] = &ms[i]
		p.byID[ms[i].ID] = &ms[i]
	}
	return p
}

func (p *planner) add(st Step) { p.steps = append(p.steps, st) }

func (p *planner) wakeAt(t time.Time) {
	if p.next.IsZero() || t.Before(p.next) {
		p.next = t
	}
}

// queued counts the requests still waiting for id.
func (p *planner) queued(id string) int {
	n := 0
	for i, w := range p.queue {
		if !p.gone[i] && w.Model == id {
			n++
		}
	}
	return n
}

// dequeue takes every waiter of id out of the queue and returns how many there were.
func (p *planner) dequeue(id string) int {
	n := p.queued(id)
	for i, w := range p.queue {
		p.gone[i] = p.gone[i] || w.Model == id
	}
	return n
}

// views is the scheduling snapshot of the copy now: every model holding or about to hold a process.
func (p *planner) views() []Model {
	out := make([]Model, 0, len(p.models))
	for _, m := range p.models {
		if v, ok := p.view(m); ok {
			out = append(out, v)
		}
	}
	return out
}

func (p *planner) view(m *Model) (Model, bool) {
	v := *m
	v.Queued = p.queued(m.ID)
	return v, m.Phase <= Stopping
}

func (p *planner) stop(m *Model, why Why, forModel string, need Mem) {
	m.Phase = Stopping
	p.add(Step{Op: OpStop, Model: m.ID, Why: why, For: forModel, Need: need})
}

// 1.
func (p *planner) timeOutLate() {
	for i, w := range p.queue {
		if m := p.byID[w.Model]; w.Late && (m == nil || m.Phase != Loading) {
			p.gone[i] = true
			p.add(Step{Op: OpTimeOut, Model: w.Model, Waiter: i})
		}
	}
}

// 2.
func (p *planner) undrain() {
	for _, m := range p.models {
		if m.Draining && m.DrainFor != "" && p.queued(m.DrainFor) == 0 && m.Phase != Stopping {
			m.Draining, m.DrainFor = false, ""
			p.add(Step{Op: OpUndrain, Model: m.ID})
		}
	}
}

// 3.
func (p *planner) stopDrained() {
	for _, m := range p.models {
		if m.Draining && m.Leases == 0 && (m.Phase == Loaded || m.Phase == Sleeping) {
			p.stop(m, StopDrained, "", Mem{})
		}
	}
}

// 4.
func (p *planner) stopExcess() {
	for _, id := range Excess(p.views(), p.s.Limits) {
		p.stop(p.byID[id], StopOverLimit, "", Mem{})
	}
}

// 6.
func (p *planner) unloadIdle() {
	for _, m := range p.models {
		v, ok := p.view(m)
		if !ok {
			continue
		}
		due, ok := UnloadDue(v)
		if !ok {
			continue
		}
		if !due.After(p.s.Now) {
			p.stop(m, StopIdle, "", Mem{})
			continue
		}
		p.wakeAt(due)
	}
}
