package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/llamatray/llamatray/router/child"
)

// action is work decided under the lock and carried out after it is released.
type action struct {
	start   *child.Spec // spawn this child for model id, generation gen
	workers []string    // start: check these workers first, and give the child --rpc with their links
	// diagnose: ask whether one of these workers of model id's child gen is down (it failed)
	diagnose []string
	stop     Proc
	force    bool
	id       string
	gen      uint64
}

// transact is the engine's one way to change state: decide runs under mu (with the engine clock's
// now) and returns the actions it decided; reconcile then makes every further decision the new state
// calls for, in the same critical section; the actions of both are carried out through the effects
// once mu is released.
func (e *Engine) transact(decide func(now time.Time) []action) {
	e.transactOr(func(now time.Time) ([]action, bool) { return decide(now), true })
}

// transactOr is transact for a change that may call for no decision at all: decide also says
// whether reconcile must run (replan). Only a lease taken or given back on a model that keeps
// serving, with nobody queued, skips it (sched.Settled): sched.Plan over that state decides
// what it decided before, and a timer it armed for an idle model that is busy again only makes it
// run once more, then.
func (e *Engine) transactOr(decide func(now time.Time) (acts []action, replan bool)) {
	e.mu.Lock()
	now := e.fx.Now()
	acts, replan := decide(now)
	if replan {
		acts = append(acts, e.reconcile(now)...)
	}
	// Each start is counted while mu is held, so that Close, which sets closed under mu and then
	// waits for the count, waits for every child decided before it.
	for _, a := range acts {
		if a.start != nil {
			e.spawn.Add(1)
		}
	}
	e.mu.Unlock()
	e.act(acts)
}

// act carries out actions (each start already counted in spawn). Called without the lock.
func (e *Engine) act(acts []action) {
	for _, a := range acts {
		switch {
		case a.stop != nil:
			if e.o.OnStop != nil {
				e.o.OnStop(a.id)
			}
			a.stop.Stop(a.force)
		case len(a.diagnose) > 0:
			e.fx.Go(func() { _ = e.diagnose(a.id, a.gen, a.diagnose) })
		case a.start != nil && len(a.workers) > 0:
			e.fx.Go(func() { e.prepareAndSpawn(a) })
		case a.start != nil:
			e.spawnChild(a.id, a.gen, *a.start)
		}
	}
}

// spawned registers a started child with its model, or fails the model when it could not start. A
// child whose model moved on (a newer generation, or forgotten) is killed.
func (e *Engine) spawned(id string, gen uint64, p Proc, err error) {
	e.transact(func(now time.Time) []action {
		m := e.models[id]
		if m == nil || m.gen != gen {
			if p != nil {
				return []action{{stop: p, force: true, id: id, gen: gen}}
			}
			return nil
		}
		var we *WorkerError
		if errors.As(err, &we) {
			e.log.Error("worker check failed", "model", id, "worker", we.Worker, "err", err)
			return e.fail(m, err.Error(), nil, err, now)
		}
		if err != nil {
			e.log.Error("starting llama-server failed", "model", id, "err", err)
			return e.fail(m, fmt.Sprintf("could not start llama-server: %v", err), nil, err, now)
		}
		if m.child == nil && m.state.Running() {
			m.child = p
			m.pid = p.PID()
			if m.stopReq || e.closed {
				return []action{{stop: p, force: m.forceReq, id: id, gen: gen}}
			}
		}
		return nil
	})
}

// arm sets the single engine timer to reconcile again at t (zero: no timer). Called with mu held.
func (e *Engine) arm(t, now time.Time) {
	if t.Equal(e.timerAt) {
		return
	}
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	e.timerAt = t
	e.timerSeq++
	if t.IsZero() {
		return
	}
	seq := e.timerSeq
	e.timer = e.fx.AfterFunc(t.Sub(now), func() {
		e.transact(func(time.Time) []action {
			if e.timerSeq == seq { // not replaced while this call waited for the lock
				e.timerAt, e.timer = time.Time{}, nil
			}
			return nil
		})
	})
}
