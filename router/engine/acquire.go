package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/llamatray/llamatray/router/sched"
)

// waiter is one request for a model. Guarded by Engine.mu, except ch, which is buffered (1) and
// receives exactly one result, from answer, under mu.
type waiter struct {
	model string
	enq   time.Time
	ch    chan result
	timer Timer // the queue deadline; nil once answered
	done  bool  // answered, or left the queue
	late  bool  // the deadline passed while its model was loading: the load answers it
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
	return e.AcquireID(ctx, id)
}

// AcquireID is Acquire for a name already resolved to its catalog ID (Resolve), so that a request
// resolves its model's name once.
func (e *Engine) AcquireID(ctx context.Context, id string) (*Lease, error) {
	e.mu.Lock()
	known := e.models[id] != nil || e.closed
	e.mu.Unlock()
	if !known {
		e.SyncCatalog() // the catalog knows a model the engine has not synced yet
	}
	return e.await(ctx, e.request(id))
}

// request decides what a request for id gets: a lease or an error at once, or a place in the queue
// with its deadline armed. Either way the answer arrives on the waiter's ch.
func (e *Engine) request(id string) *waiter {
	w := &waiter{model: id, ch: make(chan result, 1)}
	e.transactOr(func(now time.Time) ([]action, bool) {
		w.enq = now
		if r, replan, ok := e.answerNow(id, now); ok {
			e.answer(w, r)
			return nil, replan
		}
		e.queue = append(e.queue, w)
		w.timer = e.fx.AfterFunc(e.o.QueueTimeout, func() { e.expire(w) })
		e.queueChanged(id)
		return nil, true
	})
	return w
}

// TryAcquireID is AcquireID when its answer is there at once: a lease on a model that takes one
// now, or an error (unknown, refused, failed, no llama-server). answered false: the request would
// wait, and nothing was queued; AcquireID waits. A caller that does something while a request
// waits (loading progress) starts that only when it must.
func (e *Engine) TryAcquireID(id string) (lease *Lease, answered bool, err error) {
	e.transactOr(func(now time.Time) ([]action, bool) {
		if e.models[id] == nil && !e.closed {
			return nil, false // AcquireID syncs the catalog first
		}
		r, replan, ok := e.answerNow(id, now)
		lease, answered, err = r.lease, ok, r.err
		return nil, ok && replan
	})
	return lease, answered, err
}

// answerNow is what a request for id gets without waiting, and whether reconcile must run after it;
// answered false: it waits. It has the shape of reconcile: a snapshot, sched.Answer's decision over
// it (the numbered rules are in its comment), and the step applied. Called with mu held.
func (e *Engine) answerNow(id string, now time.Time) (r result, replan, answered bool) {
	if e.closed {
		return result{err: ErrClosed}, true, true
	}
	if e.o.Binary == "" {
		return result{err: &NoServerError{Hint: e.o.BinaryHint}}, true, true
	}
	m := e.models[id]
	if m == nil {
		return result{err: &UnknownModelError{Name: id}}, true, true
	}
	// The snapshot sched.Answer decides over: the model, and for a wake the running models and room.
	sm := e.schedModel(m)
	var running []sched.Model
	var room sched.Room
	if m.state == StateSleeping && len(e.queue) == 0 {
		sm.Need, running, room = e.need(m), e.running(), e.room()
	}
	switch st := sched.Answer(sm, running, room, len(e.queue) > 0, now); {
	case st.Op == sched.OpFail:
		return result{err: e.failure(m, st)}, true, true
	case st.Op == sched.OpAdmit:
		l := e.grant(m, now)
		sm.Leases = m.leases
		return result{lease: l}, !sched.Settled(sm, len(e.queue) > 0), true
	case st.Op == sched.OpWake:
		e.expectWake(m)
		return result{lease: e.grant(m, now)}, true, true
	}
	return result{}, false, false
}

// await waits for w's answer, or takes w out of the queue when ctx ends.
func (e *Engine) await(ctx context.Context, w *waiter) (*Lease, error) {
	select {
	case r := <-w.ch:
		return e.finish(w, r)
	case <-ctx.Done():
		if r, ok := e.leave(w); ok && r.lease != nil {
			r.lease.Release()
		}
		return nil, fmt.Errorf("waiting for model %q: %w", w.model, ctx.Err())
	}
}

// finish stamps a granted lease with how long its request waited.
func (e *Engine) finish(w *waiter, r result) (*Lease, error) {
	if r.lease != nil {
		r.lease.Waited = e.fx.Now().Sub(w.enq)
	}
	return r.lease, r.err
}

// answer gives w its one result and disarms its deadline. Called with mu held; w is out of the queue.
func (e *Engine) answer(w *waiter, r result) {
	if !w.done {
		w.close()
		w.ch <- r
	}
}

// close marks w answered, or gone, and disarms its deadline. Called with mu held.
func (w *waiter) close() {
	w.done = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// unqueue takes w out of the queue, if it is there. Called with mu held.
func (e *Engine) unqueue(w *waiter) {
	for i, q := range e.queue {
		if q == w {
			e.queue = append(e.queue[:i:i], e.queue[i+1:]...)
			e.queueChanged(w.model)
			return
		}
	}
}

// queueChanged publishes a queue event with id's queue length (Queued). Every change of a
// model's queue length has one: a request queued, and waiters leaving it (served, failed, timed out
// or gone), so a subscriber can follow each model's waiters. Called with mu held.
func (e *Engine) queueChanged(id string) {
	n := e.queued(id)
	ev := Event{Kind: EventQueue, Model: id, Queued: n, Message: fmt.Sprintf("%d queued", n)}
	if m := e.models[id]; m != nil {
		ev.State, ev.Active = m.state, m.leases
	}
	e.publish(ev)
}

// expire is w's queue deadline: sched.Expire decides whether the request times out, is answered by
// its model's load (late), or waits fair_wait more for its turn. An answer already given stands.
func (e *Engine) expire(w *waiter) {
	e.transact(func(now time.Time) []action {
		if w.done {
			return nil
		}
		w.timer = nil
		m := e.models[w.model]
		if m == nil {
			e.timeOut(w, now)
			return nil
		}
		switch sched.Expire(e.schedModel(m), m.wait != nil && m.wait.Turn, e.o.FairWait) {
		case sched.DeadlineLate:
			w.late = true
		case sched.DeadlineExtend:
			e.log.Info("queue deadline passed while the request waits its turn: it waits fair_wait more", "model", m.id,
				"waited", now.Sub(w.enq).Round(time.Second), "wait", m.wait.Kind, "fair_wait", e.o.FairWait)
			w.timer = e.fx.AfterFunc(e.o.FairWait, func() { e.expire(w) })
		default:
			e.timeOut(w, now)
		}
		return nil
	})
}

// timeOut ends queued w with QueueTimeoutError, naming why it waited. Called with mu held.
func (e *Engine) timeOut(w *waiter, now time.Time) {
	e.unqueue(w)
	qe := &QueueTimeoutError{Model: w.model, Waited: now.Sub(w.enq), RetryAfter: retryAfter}
	if m := e.models[w.model]; m != nil && m.wait != nil {
		qe.Wait = m.wait.clone()
	}
	e.answer(w, result{err: qe})
}

// leave takes w out of the queue for a request that gave up. If w was answered already it returns
// that answer (ok) instead.
func (e *Engine) leave(w *waiter) (r result, ok bool) {
	e.transact(func(time.Time) []action {
		if w.done {
			select {
			case r = <-w.ch:
				ok = true
			default: // await took it
			}
			return nil
		}
		e.unqueue(w)
		w.close()
		return nil
	})
	return r, ok
}

// retryAfter guesses when a slot may free up: the load timeout is too long; a few seconds is honest.
const retryAfter = 5 * time.Second

// expectWake counts a sleeping model as holding its full footprint once a request wakes it.
func (e *Engine) expectWake(m *model) {
	m.held = m.held.Max(e.need(m))
}

// grant takes a lease on m. Called with mu held.
func (e *Engine) grant(m *model, now time.Time) *Lease {
	m.leases++
	m.lastUsed = now
	l := &Lease{Model: m.id, URL: m.base, Socket: m.socket, eng: e, m: m, gen: m.gen, workers: slices.Clone(m.workers)}
	e.publish(Event{Kind: EventLease, Model: m.id, State: m.state, Active: m.leases})
	return l
}

// release gives a lease back; the count can never go below zero. Reconcile runs after it unless
// sched.Settled says the release changes no decision.
func (e *Engine) release(m *model) {
	e.transactOr(func(now time.Time) ([]action, bool) {
		if m.leases <= 0 {
			e.log.Error("lease released twice", "model", m.id)
			return nil, true
		}
		m.leases--
		m.lastUsed = now
		e.publish(Event{Kind: EventLease, Model: m.id, State: m.state, Active: m.leases})
		return nil, !sched.Settled(e.schedModel(m), len(e.queue) > 0)
	})
}
