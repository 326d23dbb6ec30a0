package engine

import (
	"math"
	"time"

	"github.com/llamatray/llamatray/router/sched"
)

// reconcile makes every decision the current state calls for and returns the actions to carry out
// once the lock is released. Called with mu held.
//
//  1. Requests whose deadline passed during a load that ended without them time out; fair-wait
//     drains whose requests are gone are called off; draining models with no lease left start
//     stopping.
//  2. Idle models over the configured memory limit or max_loaded stop (stopExcess).
//  3. The queue is served in the order of each model's first waiter: a ready model hands its waiters
//     leases; a model that needs memory is planned by sched.Plan (start, evict idle victims, wait for
//     stopping ones, or blocked). A blocked model blocks every later load (strict FIFO); once its head
//     waiter has waited FairWait, sched.Drain picks busy models to drain for it. A load that would
//     measure a nearly full GPU's free memory while another child loads or wakes there waits for
//     it (loadingBeside), and blocks the later ones as well. Each model that still waits gets its
//     reason (model.wait, wait.go) from the decision made for it.
//  4. Idle timers stop models unused for their idle-unload time.
func (e *Engine) reconcile(now time.Time) []action {
	if e.closed {
		return nil
	}
	e.timeOutLate(now)
	e.undrain()
	var acts []action
	for _, m := range e.models {
		if m.draining && m.leases == 0 && (m.state == StateLoaded || m.state == StateSleeping) {
			acts = append(acts, e.stopModel(m, false, m.drainWhy)...)
		}
	}
	acts = append(acts, e.stopExcess()...)
	next := time.Time{}
	wake := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}

	// Models in order of their first waiter, each with that waiter's enqueue time.
	var order []*model
	firstEnq := map[string]time.Time{}
	for _, w := range e.queue {
		if _, ok := firstEnq[w.model]; !ok {
			firstEnq[w.model] = w.enq
			if m := e.models[w.model]; m != nil {
				order = append(order, m)
			}
		}
	}
	reserved := map[string]sched.Mem{} // loads and wakes decided but not started: they hold their need already
	booked := func(views []sched.View) []sched.View {
		for id, need := range reserved {
			views = sched.Reserve(views, id, need)
		}
		return views
	}
	ws := e.newWaits(now, firstEnq)
	blockedBy := "" // the first blocked model: every later load waits behind it
	for i, m := range order {
		switch {
		case m.removed:
			e.failWaiters(m, &UnknownModelError{Name: m.id})
			continue
		case m.state == StateLoaded && !m.draining:
			e.grantWaiters(m, now)
			continue
		case m.state == StateLoading:
			ws.add(m, WaitLoading, m.plan, booked(e.views()))
			continue
		case m.state == StateStopping:
			ws.add(m, WaitStopping, e.need(m), booked(e.views()))
			continue
		case m.draining:
			ws.add(m, WaitDraining, e.need(m), booked(e.views()))
			continue
		case m.state == StateFailed && now.Before(m.nextRetry):
			e.failWaiters(m, e.loadError(m))
			continue
		}
		if blockedBy != "" {
			ws.add(m, WaitBehind, e.need(m), booked(e.views())).Behind = blockedBy
			continue
		}
		views := booked(shieldAhead(e.views(), order[:i]))
		need := e.need(m)
		if m.state == StateSleeping {
			need = need.Sub(m.held)
		}
		d := sched.Fit(views, need, e.room(), m.id)
		switch {
		case d.TooLarge:
			e.failWaiters(m, e.tooLarge(m.id, need, e.room().Ceiling))
		case d.Start && m.state == StateSleeping:
			e.expectWake(m)
			e.grantWaiters(m, now)
		case d.Start:
			if o := e.loadingBeside(m, need); o != "" {
				blockedBy = m.id
				ws.add(m, WaitBehind, need, views).Behind = o
				break
			}
			acts = append(acts, e.startModel(m, now))
			ws.add(m, WaitLoading, m.plan, booked(e.views()))
		case len(d.Victims) > 0:
			for _, id := range d.Victims {
				v := e.models[id]
				e.log.Info("evicting idle model", "model", id, "for", m.id, "held_mib", e.shown(v.held)>>20, "need_mib", e.shown(need)>>20)
				acts = append(acts, e.stopModel(v, false, "evicted for "+m.id)...)
			}
			ws.add(m, WaitMemory, need, views).Victims = e.waitModels(e.stoppingFor(m.id))
			reserved[m.id] = need
		case d.Wait:
			ws.add(m, WaitMemory, need, views).Victims = e.waitModels(e.stoppingFor(m.id))
			reserved[m.id] = need
		default: // blocked behind busy models
			blockedBy = m.id
			w := ws.add(m, WaitBusy, need, views)
			var holders []string
			for _, h := range sched.Holders(views, m.id) {
				holders = append(holders, h.ID)
			}
			w.Holders = e.waitModels(holders)
			if need.Within(sched.Free(views, e.room().Budget)) && e.o.MaxLoaded > 0 {
				w.MaxLoaded = e.o.MaxLoaded
			}
			due := firstEnq[m.id].Add(e.o.FairWait)
			drain, ok := sched.Drain(views, need, e.room(), m.id)
			if now.Before(due) {
				if ok && len(drain) > 0 {
					w.DrainAt = due
				}
				wake(due)
				break
			}
			if ok {
				for _, id := range drain {
					v := e.models[id]
					if !v.draining {
						e.log.Info("draining busy model so a queued load gets its turn", "model", id, "for", m.id, "waited", now.Sub(firstEnq[m.id]).Round(time.Millisecond), "active", v.leases)
						e.setDraining(v, "draining for "+m.id+" (fair wait)", m.id)
					}
				}
			}
			w.Victims = e.waitModels(e.drainingFor(m.id))
		}
	}
	ws.done()

	for _, m := range e.models {
		due, ok := e.unloadDue(m)
		if !ok {
			continue
		}
		if !due.After(now) {
			e.log.Info("idle unload", "model", m.id, "idle", now.Sub(m.lastUsed).Round(time.Second))
			acts = append(acts, e.stopModel(m, false, "idle")...)
			continue
		}
		wake(due)
	}
	e.arm(next, now)
	return acts
}

// grantWaiters hands every waiter of m a lease, in FIFO order. Called with mu held.
func (e *Engine) grantWaiters(m *model, now time.Time) {
	kept := e.queue[:0]
	for _, w := range e.queue {
		if w.model == m.id {
			e.answer(w, result{lease: e.grant(m, now)})
			continue
		}
		kept = append(kept, w)
	}
	n := len(e.queue) - len(kept)
	clear(e.queue[len(kept):])
	e.queue = kept
	if n > 0 {
		e.queueChanged(m.id)
	}
}

// failWaiters ends every waiter of m with err. Called with mu held.
func (e *Engine) failWaiters(m *model, err error) {
	kept := e.queue[:0]
	for _, w := range e.queue {
		if w.model == m.id {
			e.answer(w, result{err: err})
			continue
		}
		kept = append(kept, w)
	}
	n := len(e.queue) - len(kept)
	clear(e.queue[len(kept):])
	e.queue = kept
	if n > 0 {
		e.queueChanged(m.id)
	}
}

// setDraining stops m from taking new leases; reconcile stops it once its last lease is released.
// forModel is the model whose queued requests the drain is for ("": asked for, as by Unload); such a
// drain is called off when they are all gone (see undrain). Called with mu held.
func (e *Engine) setDraining(m *model, why, forModel string) {
	if m.draining {
		if forModel == "" { // an asked-for drain outlasts the one it joins
			m.drainFor, m.drainWhy = "", why
		}
		return
	}
	m.draining, m.drainWhy, m.drainFor = true, why, forModel
	e.publish(Event{Kind: "state", Model: m.id, State: m.state, Active: m.leases, Message: why})
}

// undrain calls off the fair-wait drains whose requests left the queue (served, timed out or gone),
// so the drained model takes requests again. Called with mu held.
func (e *Engine) undrain() {
	for _, m := range e.models {
		if !m.draining || m.drainFor == "" || e.queued(m.drainFor) > 0 || m.state == StateStopping {
			continue
		}
		e.log.Info("drain called off: the request it was for is gone", "model", m.id, "for", m.drainFor)
		m.draining, m.drainWhy, m.drainFor = false, "", ""
		e.publish(Event{Kind: "state", Model: m.id, State: m.state, Active: m.leases, Message: "drain called off"})
	}
}

// loadError describes why m is failed.
func (e *Engine) loadError(m *model) *LoadError {
	le := &LoadError{Model: m.id, Reason: m.errMsg, LogTail: append([]string(nil), m.logTail...), RetryAt: m.nextRetry}
	if m.exitCode != nil {
		c := *m.exitCode
		le.ExitCode = &c
	}
	if le.Reason == "" {
		le.Reason = "unknown error"
	}
	return le
}

// backoff is the wait before the n-th retry of a failed model: 1 s doubling, at most 60 s.
func backoff(n int) time.Duration {
	d := time.Second
	for i := 1; i < n && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}

// stopExcess stops the idle models a lowered memory limit or max_loaded leaves no room for. Only the
// configured limits count here; what other programs take is the pressure monitor's. Called with mu held.
func (e *Engine) stopExcess() []action {
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
	var acts []action
	for _, id := range sched.Excess(e.views(), limit) {
		m := e.models[id]
		e.log.Info("stopping idle model over the limits", "model", id, "memory_limit_mib", e.o.MemoryLimit>>20, "max_loaded", e.o.MaxLoaded)
		acts = append(acts, e.stopModel(m, false, "over the memory limit or max_loaded")...)
	}
	return acts
}

// shieldAhead keeps the queued mark (never a victim) only on the models whose requests are queued
// ahead of the one being planned: first come, first served, so a load queued first may evict a
// sleeping model whose wake was asked for after it rather than wait behind it.
func shieldAhead(views []sched.View, ahead []*model) []sched.View {
	for i := range views {
		if views[i].Queued == 0 {
			continue
		}
		first := false
		for _, m := range ahead {
			if m.id == views[i].ID {
				first = true
				break
			}
		}
		if !first {
			views[i].Queued = 0
		}
	}
	return views
}
