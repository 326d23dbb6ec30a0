// Package engine runs llama-server children for Llamatray and hands out per-model request leases.
//
// One mutex (Engine.mu) guards the model table and the load queue. Every change is one transaction
// (transact): decide under the lock, reconcile (the pure functions of package sched over a snapshot),
// and carry out what was decided (spawn, stop) through the Effects once the lock is released. In
// production the effects are package child, whose supervisor goroutine is the only owner of each
// process, and the real clock; tests give a fake and drive the scheduler synchronously. Child events
// come back through onChild, which is a transaction too.
package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/child"
	"github.com/llamatray/llamatray/router/mem"
)

// Catalog is what the engine needs of the model catalog.
type Catalog interface {
	Models() []catalog.Model
	Lookup(name string) (catalog.Model, bool)
	Suggest(name string, n int) []string
	Subscribe() (<-chan struct{}, func())
}

// Probe measures memory (package mem); tests inject their own.
type Probe = mem.Probe

// Settings are the per-model knobs the engine applies when it starts a child.
type Settings struct {
	Args        []string      // llama-server args beyond -m/--mmproj/--alias/-c/--sleep-idle-seconds
	CtxSize     int           // -c; 0 = the model's trained context length
	Pinned      bool          // never evicted by pressure or timers
	LoadOnStart bool          // loaded when the engine starts
	IdleSleep   time.Duration // --sleep-idle-seconds; <=0 off
	IdleUnload  time.Duration // stop after this long without leases; <=0 off
	// Refuse, when set, fails every load of the model at once with this reason, before any child
	// starts: settings it cannot run with (a draft model that is missing or of another vocabulary).
	Refuse string
	// Workers are the workers the model is spread over (--rpc with each one's link; workers.go).
	Workers []string
}

// Options configure an Engine.
type Options struct {
	Limits        // the settings that may change while it runs (SetLimits)
	Catalog       Catalog
	Settings      func(id string) Settings // nil → zero Settings
	RouterPort    int                      // LLAMA_SERVER_ROUTER_PORT for children
	Env           []string                 // extra env for children
	StateDir      string                   // learned footprints are persisted here ("" = not persisted)
	Memory        Probe                    // nil → the machine
	PressureEvery time.Duration            // memory sampling period, default 2s
	Effects       Effects                  // nil → ChildEffects: real children, clock and timers
	Workers       Workers                  // the links to workers, for models with Settings.Workers; nil: such loads fail
	// OnStop, when set, is told each model whose child is about to be stopped, off the lock: the
	// proxy closes its idle connections to it, which llama-server would otherwise wait on (about
	// 0.1 s) before it exits.
	OnStop func(id string)
	Logger *slog.Logger
}

// Engine runs children and hands out leases. Methods are safe for concurrent use.
type Engine struct {
	o     Options
	log   *slog.Logger
	addrs child.Addrs // where children listen: unix sockets in a private folder (Windows: ports)
	fx    Effects
	fp    *footprints
	kick  chan struct{}  // asks the monitor loop for a fresh memory sample
	stop  chan struct{}  // closed by Close
	wg    sync.WaitGroup // background loops
	spawn sync.WaitGroup // Effects.Spawn calls whose started callback has not returned

	mu       sync.Mutex // guards o.Limits (see SetLimits), every field below, and every *model reachable from models
	models   map[string]*model
	queue    []*waiter // FIFO of requests waiting for a load, a wake or a slot
	subs     map[*subscriber]struct{}
	seq      uint64
	closed   bool
	sys      mem.System // last memory sample
	sysOK    bool
	timer    Timer // next idle-unload or fair-wait deadline
	timerAt  time.Time
	timerSeq uint64    // bumped by each arm, so a replaced timer's late call changes nothing
	gen      uint64    // child generations, so events of an old child are ignored
	rpcDevs  []mem.GPU // the workers' devices as of the last sample (rpcdevices.go)
}

// New builds an Engine. Call Start to begin its background loops.
func New(o Options) (*Engine, error) {
	if o.Catalog == nil {
		return nil, errors.New("engine: no catalog")
	}
	if o.Settings == nil {
		o.Settings = func(string) Settings { return Settings{} }
	}
	if o.QueueTimeout <= 0 {
		o.QueueTimeout = 2 * time.Minute
	}
	o.FairWait = cmp.Or(o.FairWait, 30*time.Second)
	if o.PressureEvery <= 0 {
		o.PressureEvery = 2 * time.Second
	}
	if o.Memory == nil {
		o.Memory = mem.Machine()
	}
	o.Logger = cmp.Or(o.Logger, slog.Default())
	o.Effects = cmp.Or(o.Effects, Effects(ChildEffects{}))
	if o.MemoryLimit < 0 || o.Reserve < 0 {
		return nil, fmt.Errorf("engine: negative memory limit or reserve")
	}
	fp, err := loadFootprints(o.StateDir)
	if err != nil {
		o.Logger.Warn("learned footprints not loaded", "err", err)
	}
	e := &Engine{
		o:      o,
		log:    o.Logger,
		addrs:  child.NewAddrs(),
		fx:     o.Effects,
		fp:     fp,
		kick:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		models: map[string]*model{},
		subs:   map[*subscriber]struct{}{},
	}
	e.SyncCatalog()
	return e, nil
}

// Start takes a first memory sample, starts the monitor and catalog loops, and loads the models
// configured to load on start. It returns once the first sample is taken.
func (e *Engine) Start(ctx context.Context) error {
	e.sample(ctx)
	changes, cancel := e.o.Catalog.Subscribe()
	e.SyncCatalog() // the catalog may have been scanned before we subscribed
	e.wg.Add(2)
	go func() {
		defer e.wg.Done()
		defer cancel()
		for {
			select {
			case <-e.stop:
				return
			case <-changes:
				e.SyncCatalog()
			}
		}
	}()
	go e.monitor()
	for _, m := range e.Models() {
		if e.o.Settings(m.ID).LoadOnStart {
			if err := e.StartLoad(m.ID); err != nil {
				e.log.Warn("load on start failed", "model", m.ID, "err", err)
			}
		}
	}
	return nil
}

// Limits are the engine settings that may change while it runs (the settings window applies them).
type Limits struct {
	Binary       string           // llama-server path; "" → every load fails with NoServerError
	BinaryHint   string           // how to install llama-server on this OS
	MemoryLimit  int64            // 0 → derived from the machine's available RAM
	Reserve      int64            // RAM always left free for the rest of the system
	MaxLoaded    int              // 0 = no cap
	DeviceLimits map[string]int64 // GPU memory models may use per device, by llama-server's name (Vulkan0) or the driver's; absent = the device's memory
	FitTarget    bool             // the llama-server in use takes --fit-target: each child on GPUs is given its device share (fitArgs)
	QueueTimeout time.Duration    // default 2m (SetLimits: <= 0 leaves it unchanged)
	FairWait     time.Duration    // default 30s (SetLimits: 0 leaves it unchanged); negative: off (busy models are never drained for a queued load)
	LoadTimeout  time.Duration    // default 5m
	StopTimeout  time.Duration    // default 10s
}

// SetLimits applies new limits; models are re-planned at once (a smaller budget does not evict busy
// models, it only stops idle ones and queues new loads).
func (e *Engine) SetLimits(l Limits) {
	e.transact(func(time.Time) []action {
		l.MemoryLimit, l.Reserve = max(l.MemoryLimit, 0), max(l.Reserve, 0)
		l.DeviceLimits = maps.Clone(l.DeviceLimits)
		if l.QueueTimeout <= 0 {
			l.QueueTimeout = e.o.QueueTimeout
		}
		l.FairWait = cmp.Or(l.FairWait, e.o.FairWait) // negative: off
		e.o.Limits = l
		return nil
	})
}

// SyncCatalog adds catalog models the engine does not know and forgets vanished ones that are idle.
// It runs when the catalog's change notice arrives; a caller that just scanned calls it at once.
func (e *Engine) SyncCatalog() {
	list := e.o.Catalog.Models()
	settings := make([]Settings, len(list))
	for i, cm := range list {
		settings[i] = e.o.Settings(cm.ID)
	}
	e.transact(func(time.Time) []action {
		seen := make(map[string]bool, len(list))
		for i, cm := range list {
			seen[cm.ID] = true
			m := e.models[cm.ID]
			if m == nil {
				m = &model{id: cm.ID, state: StateUnloaded, pinned: settings[i].Pinned}
				e.models[cm.ID] = m
			} else if !m.pinSet {
				m.pinned = settings[i].Pinned
			}
			m.entry = cm
			m.set = settings[i]
			m.removed = false
			args := e.args(m)
			m.learned = e.fp.lookup(footprintKey(cm, args), legacyFootprintKey(cm, args))
		}
		for id, m := range e.models {
			if seen[id] {
				continue
			}
			if m.state.Running() || m.leases > 0 || e.queued(id) > 0 {
				m.removed = true
				continue
			}
			delete(e.models, id)
		}
		e.publish(Event{Kind: EventCatalog, Models: len(list), Message: fmt.Sprintf("%d models", len(list))})
		return nil
	})
}

// Close refuses new work, fails queued requests and stops every child, waiting for them to exit until
// ctx ends; then it kills what is left.
func (e *Engine) Close(ctx context.Context) error {
	already := false
	e.transact(func(time.Time) []action {
		if e.closed {
			already = true
			return nil
		}
		e.closed = true
		close(e.stop)
		if e.timer != nil {
			e.timer.Stop()
		}
		for _, w := range e.queue {
			e.answer(w, result{err: ErrClosed})
		}
		e.queue = nil
		return nil
	})
	if already {
		return nil
	}
	e.spawn.Wait() // every child that is being started is registered after this
	var children []Proc
	e.transact(func(time.Time) []action {
		var acts []action
		for _, m := range e.models {
			if m.state.Running() {
				acts = append(acts, e.stopModel(m, false, CauseShutdown, "")...)
			}
			if m.child != nil {
				children = append(children, m.child)
			}
		}
		return acts
	})
	var err error
	for _, c := range children {
		select {
		case <-c.Done():
		case <-ctx.Done():
			c.Stop(true)
			<-c.Done()
			err = fmt.Errorf("engine: children killed after the shutdown deadline: %w", ctx.Err())
		}
	}
	e.wg.Wait()
	if cerr := child.CloseAddrs(e.addrs); cerr != nil {
		e.log.Warn("socket folder not removed", "err", cerr)
	}
	e.mu.Lock()
	for s := range e.subs {
		delete(e.subs, s)
		close(s.ch)
	}
	e.mu.Unlock()
	return err
}
