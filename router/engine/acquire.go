package engine

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/sched"
)

// waiter is one request queued for a model. Guarded by Engine.mu, except ch, which is buffered (1)
// and receives exactly one result.
type waiter struct {
	model string
	enq   time.Time
	ch    chan result
}

type result struct {
	lease *Lease
	err   error
}

// Resolve maps an ID or alias to the model ID. Only catalog names resolve, never file paths.
func (e *Engine) Resolve(name string) (string, error) {
	if cm, ok := e.o.Catalog.Lookup(name); ok {
		return cm.ID, nil
	}
	return "", &UnknownModelError{Name: name, Suggestions: e.o.Catalog.Suggest(name, 3)}
}

// Acquire returns a lease on a ready child of the named model, loading it first when needed. It waits
// in the FIFO queue for memory or a slot until the queue timeout, and gives up at once when ctx ends.
func (e *Engine) Acquire(ctx context.Context, name string) (*Lease, error) {
	id, err := e.Resolve(name)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	e.mu.Lock()
	if e.models[id] == nil && !e.closed {
		// The catalog knows a model the engine has not synced yet.
		e.mu.Unlock()
		e.syncCatalog()
		e.mu.Lock()
	}
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	if e.o.Binary == "" {
		hint := e.o.BinaryHint
		e.mu.Unlock()
		return nil, &NoServerError{Hint: hint}
	}
	m := e.models[id]
	if m == nil {
		e.mu.Unlock()
		return nil, &UnknownModelError{Name: name}
	}
	if l := e.tryLease(m, start); l != nil {
		e.mu.Unlock()
		return l, nil
	}
	if m.state == StateFailed && start.Before(m.nextRetry) {
		err := e.loadError(m)
		e.mu.Unlock()
		return nil, err
	}
	w := &waiter{model: id, enq: start, ch: make(chan result, 1)}
	e.queue = append(e.queue, w)
	e.publish(Event{Kind: "queue", Model: id, State: m.state, Active: m.leases, Message: fmt.Sprintf("%d queued", e.queued(id))})
	acts := e.reconcile()
	timeout := e.o.QueueTimeout
	e.mu.Unlock()
	e.act(acts)

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-w.ch:
		return r.finish(start)
	case <-ctx.Done():
		if r, ok := e.leave(w); ok {
			r.lease.Release()
		}
		return nil, fmt.Errorf("waiting for model %q: %w", id, ctx.Err())
	case <-timer.C:
		if r, ok := e.leave(w); ok {
			return r.finish(start) // granted just as the deadline passed
		}
		return nil, &QueueTimeoutError{Model: id, Waited: time.Since(start), RetryAfter: e.retryAfter()}
	}
}

func (r result) finish(start time.Time) (*Lease, error) {
	if r.lease != nil {
		r.lease.Waited = time.Since(start)
	}
	return r.lease, r.err
}

// leave takes w out of the queue. If a result was already delivered it returns it (ok) instead.
func (e *Engine) leave(w *waiter) (result, bool) {
	e.mu.Lock()
	select {
	case r := <-w.ch:
		e.mu.Unlock()
		return r, r.lease != nil
	default:
	}
	for i, q := range e.queue {
		if q == w {
			e.queue = append(e.queue[:i:i], e.queue[i+1:]...)
			break
		}
	}
	acts := e.reconcile()
	e.mu.Unlock()
	e.act(acts)
	return result{}, false
}

// retryAfter guesses when a slot may free up: the load timeout is too long; a few seconds is honest.
func (e *Engine) retryAfter() time.Duration {
	return 5 * time.Second
}

// tryLease hands out a lease when m can serve now: loaded, or sleeping with room to wake. Called with mu held.
func (e *Engine) tryLease(m *model, now time.Time) *Lease {
	if m.draining || m.removed {
		return nil
	}
	switch m.state {
	case StateLoaded:
		return e.grant(m, now)
	case StateSleeping:
		need := e.need(m).Sub(m.held)
		if d := sched.Plan(e.views(), need, e.room(), m.id); d.Start {
			e.expectWake(m)
			return e.grant(m, now)
		}
	}
	return nil
}

// expectWake counts a sleeping model as holding its full footprint once a request wakes it.
func (e *Engine) expectWake(m *model) {
	n := e.need(m)
	if m.held.RAM < n.RAM {
		m.held.RAM = n.RAM
	}
	if m.held.VRAM < n.VRAM {
		m.held.VRAM = n.VRAM
	}
}

// grant takes a lease on m. Called with mu held.
func (e *Engine) grant(m *model, now time.Time) *Lease {
	m.leases++
	m.lastUsed = now
	u, _ := url.Parse(m.base)
	var once sync.Once
	l := &Lease{Model: m.id, URL: u, Socket: m.socket}
	l.release = func() { once.Do(func() { e.release(m) }) }
	e.publish(Event{Kind: "lease", Model: m.id, State: m.state, Active: m.leases})
	return l
}

// release gives a lease back; the count can never go below zero.
func (e *Engine) release(m *model) {
	e.mu.Lock()
	if m.leases <= 0 {
		e.mu.Unlock()
		e.log.Error("lease released twice", "model", m.id)
		return
	}
	m.leases--
	m.lastUsed = time.Now()
	e.publish(Event{Kind: "lease", Model: m.id, State: m.state, Active: m.leases})
	var acts []action
	if m.leases == 0 {
		acts = e.reconcile()
	}
	e.mu.Unlock()
	e.act(acts)
}

// Load loads the named model and waits until it is ready or failed. It clears a crash backoff.
func (e *Engine) Load(ctx context.Context, name string) error {
	id, err := e.Resolve(name)
	if err != nil {
		return err
	}
	e.mu.Lock()
	if m := e.models[id]; m != nil && m.state == StateFailed {
		m.nextRetry = time.Time{}
	}
	e.mu.Unlock()
	l, err := e.Acquire(ctx, id)
	if err != nil {
		return err
	}
	l.Release()
	return nil
}

// StartLoad starts loading the named model in the background and returns at once.
func (e *Engine) StartLoad(name string) error {
	id, err := e.Resolve(name)
	if err != nil {
		return err
	}
	go func() {
		if err := e.Load(context.Background(), id); err != nil {
			e.log.Warn("background load failed", "model", id, "err", err)
		}
	}()
	return nil
}

// Unload stops the named model. Without force it drains: new requests wait, in-flight ones finish,
// then the child stops. With force the child is stopped at once. It waits until the child is gone or
// ctx ends.
func (e *Engine) Unload(ctx context.Context, name string, force bool) error {
	id, err := e.Resolve(name)
	if err != nil {
		return err
	}
	e.mu.Lock()
	m := e.models[id]
	if m == nil || !m.state.Running() {
		e.mu.Unlock()
		return nil
	}
	done := make(chan struct{})
	m.stopped = append(m.stopped, done)
	var acts []action
	if force {
		acts = e.stopModel(m, true, "forced unload")
	} else {
		e.setDraining(m, "unload requested")
	}
	acts = append(acts, e.reconcile()...)
	e.mu.Unlock()
	e.act(acts)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("unloading %q: %w", id, ctx.Err())
	}
}

// SetPinned pins or unpins a model for this run (the configuration file is the caller's).
func (e *Engine) SetPinned(name string, pinned bool) error {
	id, err := e.Resolve(name)
	if err != nil {
		return err
	}
	e.mu.Lock()
	if m := e.models[id]; m != nil {
		m.pinned, m.pinSet = pinned, true
		e.publish(Event{Kind: "state", Model: id, State: m.state, Active: m.leases, Message: fmt.Sprintf("pinned=%v", pinned)})
	}
	acts := e.reconcile()
	e.mu.Unlock()
	e.act(acts)
	return nil
}

// Models snapshots every model of the catalog, sorted by ID.
func (e *Engine) Models() []ModelStatus {
	e.mu.Lock()
	out := make([]ModelStatus, 0, len(e.models))
	for _, m := range e.models {
		out = append(out, e.status(m))
	}
	e.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Model snapshots one model.
func (e *Engine) Model(name string) (ModelStatus, error) {
	id, err := e.Resolve(name)
	if err != nil {
		return ModelStatus{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.models[id]
	if m == nil {
		return ModelStatus{}, &UnknownModelError{Name: name}
	}
	return e.status(m), nil
}

// Logs returns the tail of the model's child output (the last child's, once it exited).
func (e *Engine) Logs(name string) []string {
	id, err := e.Resolve(name)
	if err != nil {
		return nil
	}
	e.mu.Lock()
	m := e.models[id]
	if m == nil {
		e.mu.Unlock()
		return nil
	}
	ch, tail := m.child, append([]string(nil), m.logTail...)
	e.mu.Unlock()
	if ch != nil {
		return ch.Logs()
	}
	return tail
}

// Budget reports the memory budget and how much of it models hold.
func (e *Engine) Budget() Budget {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.room()
	b := Budget{
		Limit:           r.Budget.RAM + r.Budget.VRAM,
		Configured:      e.o.MemoryLimit > 0,
		ConfiguredLimit: e.o.MemoryLimit,
		Reserve:         e.o.Reserve,
		SystemTotal:     e.sys.Total,
		SystemAvailable: e.sys.Available,
		MaxLoaded:       e.o.MaxLoaded,
	}
	for _, v := range e.views() {
		b.Used += v.Held.RAM + v.Held.VRAM
		b.Loaded++
	}
	for _, m := range e.models {
		if m.state.Running() {
			b.Measured += m.measured.RAM + m.measured.VRAM
		}
	}
	b.Free = b.Limit - b.Used
	if b.Free < 0 {
		b.Free = 0
	}
	return b
}
