package engine

import (
	"errors"
	"math"
	"slices"
	"time"

	"github.com/llamatray/llamatray/router/sched"
)

// reconcile makes every decision the current state calls for, carries out under the lock what
// changes the engine's own state, and returns the actions (spawn, stop) to carry out once the lock
// is released. The decisions are sched.Plan's, over a snapshot (the numbered decision tree is in its
// comment); reconcile only takes the snapshot and applies the steps, in order. Called with mu held.
func (e *Engine) reconcile(now time.Time) []action {
	if e.closed {
		return nil
	}
	queue := slices.Clone(e.queue) // the snapshot's waiters, by index
	steps, next := sched.Plan(e.snapshot(now, queue))
	var acts []action
	waiting := map[*model]bool{}
	for _, st := range steps {
		acts = append(acts, e.apply(st, queue, waiting, now)...)
	}
	for _, m := range e.models {
		if !waiting[m] {
			m.wait = nil // it does not wait any more
		}
	}
	e.arm(next, now)
	return acts
}

// snapshot is the state sched.Plan decides over; queue is e.queue's copy whose indexes its steps
// use. Called with mu held.
func (e *Engine) snapshot(now time.Time, queue []*waiter) sched.State {
	s := sched.State{Now: now, Room: e.room(), Limits: e.limits(), FairWait: e.o.FairWait, Linger: linger, Devices: len(e.gpus()), DeviceFree: e.deviceFree()}
	ids := make([]string, 0, len(e.models))
	for id := range e.models {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	s.Models = make([]sched.Model, 0, len(ids))
	for _, id := range ids {
		m := e.models[id]
		sm := e.schedModel(m)
		sm.Need, sm.Measures = e.need(m), !e.sys.Unified && !userOffload(m.set.Args)
		s.Models = append(s.Models, sm)
	}
	for _, w := range queue {
		s.Queue = append(s.Queue, sched.Waiter{Model: w.model, Enq: w.enq, Late: w.late})
	}
	return s
}

// deviceFree is what each device had free at the last sample plus what our children measured there:
// what a starting child that measures free memory sees, before what other models hold or are
// promised there is taken off (sched.State.DeviceFree). Called with mu held.
func (e *Engine) deviceFree() [sched.MaxGPUs]int64 {
	var free [sched.MaxGPUs]int64
	for i, g := range e.gpus() {
		free[i] = g.Free
	}
	for _, m := range e.models {
		if m.state.Running() {
			for i := range free {
				free[i] += m.measured.GPU[i]
			}
		}
	}
	return free
}

// linger is how long a loaded model that went idle while a load for another waited is kept for its
// clients' next requests before it is swapped out (sched.Plan 5.7 e; fair_wait bounds it): clients
// that send back to back are back within milliseconds, and each swap it spares costs a load.
const linger = 500 * time.Millisecond

// schedModel is m as the scheduler sees it: the one snapshot of a model that every decision of
// package sched is made over. Need (what a load of m takes) and Measures (how its child starts) are
// left to the callers that decide a load or a wake: they are not free to compute, and the request
// path does not need them. Called with mu held.
func (e *Engine) schedModel(m *model) sched.Model {
	sm := sched.Model{ID: m.id, Phase: phases[m.state], Removed: m.removed, Leases: m.leases, Pinned: m.pinned,
		Refused: m.set.Refuse != "", Draining: m.draining, DrainFor: m.drainFor, LastUsed: m.lastUsed, Held: m.held, Plan: m.plan,
		RetryAt: m.nextRetry, UnloadAfter: m.unloadAfter(),
		Workers: m.set.Workers, Queued: e.queued(m.id)}
	if m.state.Running() {
		sm.Workers = m.workers // the ones its child uses
	}
	if m.wait != nil && m.wait.Kind == WaitBusy {
		sm.BusySince = m.wait.BusySince
	}
	return sm
}

// running is the snapshot of every model that holds, or is about to hold, a process. Called with
// mu held.
func (e *Engine) running() []sched.Model {
	out := make([]sched.Model, 0, len(e.models))
	for _, m := range e.models {
		if m.state.Running() {
			out = append(out, e.schedModel(m))
		}
	}
	return out
}

// phases are the states as the scheduler sees them, every one.
var phases = map[State]sched.Phase{StateLoading: sched.Loading, StateLoaded: sched.Loaded, StateSleeping: sched.Sleeping,
	StateStopping: sched.Stopping, StateUnloaded: sched.Unloaded, StateFailed: sched.Failed}

// apply carries out one step of a plan; queue is the snapshot's waiters, waiting collects the
// models given a reason. Called with mu held.
func (e *Engine) apply(st sched.Step, queue []*waiter, waiting map[*model]bool, now time.Time) []action {
	m := e.models[st.Model]
	switch st.Op {
	case sched.OpTimeOut:
		e.timeOut(queue[st.Waiter], now)
	case sched.OpUndrain:
		e.log.Info("drain called off: the request it was for is gone", "model", m.id, "for", m.drainFor)
		m.draining, m.drainCause, m.drainFor = false, "", ""
		e.publish(Event{Kind: EventState, Model: m.id, State: m.state, Active: m.leases, Cause: CauseDrainOff, Message: CauseDrainOff.message("")})
	case sched.OpStop:
		return e.planStop(m, st, now)
	case sched.OpDrain:
		e.log.Info("draining busy model so a queued load gets its turn", "model", m.id, "for", st.For, "active", m.leases)
		e.setDraining(m, CauseFairWait, st.For)
	case sched.OpStart:
		return []action{e.startModel(m, now)}
	case sched.OpWake:
		e.expectWake(m)
		e.answerWaiters(m, nil, now)
	case sched.OpAdmit:
		e.answerWaiters(m, nil, now)
	case sched.OpFail:
		e.answerWaiters(m, e.failure(m, st), now)
	case sched.OpWait:
		waiting[m] = true
		e.setWait(m, st.Wait)
	}
	return nil
}

// planStop carries out a stop the plan decided. Called with mu held.
func (e *Engine) planStop(m *model, st sched.Step, now time.Time) []action {
	switch st.Why {
	case sched.StopDrained:
		return e.stopModel(m, false, m.drainCause, m.drainFor)
	case sched.StopEvicted:
		e.log.Info("evicting idle model", "model", m.id, "for", st.For, "held_mib", e.shown(m.held)>>20, "need_mib", e.shown(st.Need)>>20)
		return e.stopModel(m, false, CauseEvicted, st.For)
	case sched.StopOverLimit:
		e.log.Info("stopping idle model over the limits", "model", m.id, "memory_limit_mib", e.o.MemoryLimit>>20, "max_loaded", e.o.MaxLoaded)
		return e.stopModel(m, false, CauseOverLimit, "")
	default:
		e.log.Info("idle unload", "model", m.id, "idle", now.Sub(m.lastUsed).Round(time.Second))
		return e.stopModel(m, false, CauseIdle, "")
	}
}

// limits are the configured limits only, as the budget of sched.Excess: a lowered memory limit or
// max_loaded stops idle models; what other programs take is the pressure monitor's. Called with mu held.
func (e *Engine) limits() sched.Room {
	limit := sched.Room{Budget: sched.Mem{RAM: math.MaxInt64 / 4}, MaxLoaded: e.o.MaxLoaded}
	for i := range limit.Budget.GPU {
		limit.Budget.GPU[i] = math.MaxInt64 / 4
	}
	if e.o.MemoryLimit > 0 {
		limit.Budget.RAM = e.o.MemoryLimit
	}
	for i, g := range e.gpus() {
		if l := e.deviceLimit(g, i); l > 0 {
			limit.Budget.GPU[i] = l
		}
	}
	return limit
}

// answerWaiters takes every waiter of m out of the queue, in FIFO order, and answers each: with a
// lease, or with err when it is set. Called with mu held.
func (e *Engine) answerWaiters(m *model, err error, now time.Time) {
	kept := e.queue[:0]
	for _, w := range e.queue {
		switch {
		case w.model != m.id:
			kept = append(kept, w)
		case err != nil:
			e.answer(w, result{err: err})
		default:
			e.answer(w, result{lease: e.grant(m, now)})
		}
	}
	n := len(e.queue) - len(kept)
	clear(e.queue[len(kept):])
	e.queue = kept
	if n > 0 {
		e.queueChanged(m.id)
	}
}

// failure is the error of a failing step (sched.OpFail) for m's requests. Called with mu held.
func (e *Engine) failure(m *model, st sched.Step) error {
	switch st.Why {
	case sched.FailRemoved:
		return &UnknownModelError{Name: m.id}
	case sched.FailTooLarge:
		return e.tooLarge(m.id, st.Need, e.room().Ceiling)
	case sched.FailRefused:
		return &LoadError{Model: m.id, Reason: m.set.Refuse, Err: errors.New(m.set.Refuse)}
	}
	return e.loadError(m)
}

// setDraining stops m from taking new leases; reconcile stops it once its last lease is released.
// forModel is the model whose queued requests the drain is for ("": asked for, as by Unload); such a
// drain is called off when they are all gone (sched.Plan). Called with mu held.
func (e *Engine) setDraining(m *model, c Cause, forModel string) {
	if m.draining {
		if forModel == "" { // an asked-for drain outlasts the one it joins
			m.drainFor, m.drainCause = "", c
		}
		return
	}
	m.draining, m.drainCause, m.drainFor = true, c, forModel
	e.publish(Event{Kind: EventState, Model: m.id, State: m.state, Active: m.leases, Cause: c, For: forModel, Message: c.message(forModel)})
}

// loadError describes why m is failed.
func (e *Engine) loadError(m *model) *LoadError {
	le := &LoadError{Model: m.id, Reason: m.errMsg, LogTail: append([]string(nil), m.logTail...), RetryAt: m.nextRetry}
	if m.exitCode != nil {
		le.ExitCode = new(*m.exitCode)
	}
	if le.Reason == "" {
		le.Reason = "unknown error"
	}
	return le
}
