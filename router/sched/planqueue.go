package sched

import (
	"maps"
	"slices"
	"time"
)

// pass is one walk of the queue (Plan's step 5): the models in order of their first waiter, what is
// booked for loads decided but not started, and the first blocked model.
type pass struct {
	*planner
	order     []*Model
	first     map[string]time.Time // each queued model's first waiter's arrival
	reserved  map[string]Mem       // loads and wakes decided but not started: they hold their need already
	blockedBy string               // the first blocked model: every later load waits behind it
	pos       int                  // positions given so far
	workers   map[string]string    // each worker's user: the model running on it, else the first queued load claiming it
	waits     map[string]*Wait     // the reasons given so far, by model
}

// 5.
func (p *planner) serveQueue() {
	q := &pass{planner: p, first: map[string]time.Time{}, reserved: map[string]Mem{}, workers: map[string]string{}, waits: map[string]*Wait{}}
	for _, m := range p.models {
		if m.Phase <= Stopping {
			for _, w := range m.Workers {
				q.workers[w] = m.ID
			}
		}
	}
	for i, w := range p.queue {
		if _, ok := q.first[w.Model]; ok || p.gone[i] {
			continue
		}
		q.first[w.Model] = w.Enq
		if m := p.byID[w.Model]; m != nil {
			q.order = append(q.order, m)
		}
	}
	for i, m := range q.order {
		q.serve(m, q.order[:i])
	}
}

// dueAt is when m's first waiter has waited FairWait, and whether that time has come; zero and false
// when fair_wait is off.
func (q *pass) dueAt(m *Model) (time.Time, bool) {
	if q.s.FairWait <= 0 {
		return time.Time{}, false
	}
	due := q.first[m.ID].Add(q.s.FairWait)
	return due, !q.s.Now.Before(due)
}

// serve decides for m, whose first waiter comes after those of ahead.
func (q *pass) serve(m *Model, ahead []*Model) {
	switch {
	case m.Removed: // 5.1
		q.fail(m, FailRemoved, Mem{})
	case m.Refused && m.Phase > Stopping:
		q.fail(m, FailRefused, Mem{})
	case m.Phase == Loaded && !m.Draining: // 5.2
		q.admit(m, OpAdmit)
	case m.Phase == Loading: // 5.3
		q.wait(m, WaitLoading, m.Plan, q.booked(q.views()))
	case m.Phase == Stopping:
		q.wait(m, WaitStopping, m.Need, q.booked(q.views()))
	case m.Draining:
		q.wait(m, WaitDraining, m.Need, q.booked(q.views()))
	case m.Phase == Failed && q.s.Now.Before(m.RetryAt): // 5.4
		q.fail(m, FailBackoff, Mem{})
	case q.blockedBy != "": // 5.5
		w := q.wait(m, WaitBehind, m.Need, q.booked(q.views()))
		w.Behind, w.Turn = q.blockedBy, q.waits[q.blockedBy].Turn
	case q.workerWait(m): // 5.6
	default: // 5.7
		q.fit(m, ahead)
	}
}

// workerWait is 5.6: when a worker m needs is another model's, m waits for it (that model stopping
// for it when idle) and workerWait reports true; else m claims its workers and goes on to Fit.
func (q *pass) workerWait(m *Model) bool {
	if !m.Need.Within(q.s.Room.ceiling()) {
		return false // too large whatever the workers do: Fit refuses it at once
	}
	for _, w := range m.Workers {
		u := q.workers[w]
		if u == "" || u == m.ID {
			continue
		}
		o := q.byID[u]
		if o != nil && (o.Phase == Loaded || o.Phase == Sleeping) && o.Leases == 0 && !o.Pinned && !o.Draining && q.queued(u) == 0 {
			q.stop(o, StopEvicted, m.ID, m.Need)
		}
		wt := q.wait(m, WaitWorker, m.Need, q.booked(q.views()))
		wt.Worker, wt.Holders = w, []string{u}
		if o != nil && o.Phase == Stopping {
			wt.Victims, wt.Turn = []string{u}, true
		}
		// Its other workers that no one holds are claimed too: a later load for them waits behind
		// this one instead of taking them first, again and again (first come, first served).
		for _, w := range m.Workers {
			if q.workers[w] == "" {
				q.workers[w] = m.ID
			}
		}
		return true
	}
	for _, w := range m.Workers {
		q.workers[w] = m.ID
	}
	return false
}

// fit is 5.7: m needs memory.
func (q *pass) fit(m *Model, ahead []*Model) {
	views := q.booked(q.serving(shieldAhead(q.views(), ahead), m))
	need := m.Need
	if m.Phase == Sleeping {
		need = need.Sub(m.Held)
	}
	d := Fit(views, need, q.s.Room, m.ID)
	switch {
	case d.TooLarge || !m.Need.Within(q.s.Room.ceiling()): // a: a sleeper's whole footprint, not only what its wake adds
		q.fail(m, FailTooLarge, m.Need)
	case d.Start && m.Phase == Sleeping: // b
		m.Held = m.Held.Max(m.Need)
		q.admit(m, OpWake)
	case d.Start: // c, d
		if o := q.loadingBeside(m, need); o != "" {
			q.blockedBy = m.ID
			w := q.wait(m, WaitBehind, need, views)
			w.Behind, w.Turn = o, true // o is loading
			return
		}
		m.Phase, m.Held, m.Plan, m.LastUsed = Loading, m.Need, m.Need, q.s.Now
		q.add(Step{Op: OpStart, Model: m.ID})
		q.wait(m, WaitLoading, m.Plan, q.booked(q.views()))
	case len(d.Victims) > 0 || d.Wait: // e, f
		for _, id := range d.Victims {
			q.stop(q.byID[id], StopEvicted, m.ID, need)
		}
		q.wait(m, WaitMemory, need, views).Victims = q.others(m.ID, func(o *Model) bool { return o.Phase == Stopping })
		q.reserved[m.ID] = need
	default: // g
		q.blocked(m, need, views)
	}
}

// serving is 5.7 e's swap guard: it marks Serving (no victim) each loaded, idle model that served a
// request after m's first waiter was queued, Linger ago at most, while that waiter has waited less
// than FairWait, and arms the timer for when the first of the two is over.
func (q *pass) serving(views []Model, m *Model) []Model {
	first := q.first[m.ID]
	if _, over := q.dueAt(m); q.s.Linger <= 0 || over {
		return views
	}
	for i := range views {
		v := &views[i]
		until := v.LastUsed.Add(q.s.Linger)
		if v.ID == m.ID || v.Phase != Loaded || !evictable(*v) || !v.LastUsed.After(first) || !q.s.Now.Before(until) {
			continue
		}
		v.Serving = true
		q.wakeAt(until) // blocked arms due
	}
	return views
}

// blocked is 5.7 g: m waits behind busy models, and after FairWait has them drain for it.
func (q *pass) blocked(m *Model, need Mem, views []Model) {
	q.blockedBy = m.ID
	w := q.wait(m, WaitBusy, need, views)
	w.Holders = Holders(views, m.ID)
	if need.Within(Free(views, q.s.Room.Budget)) && q.s.Room.MaxLoaded > 0 {
		w.MaxLoaded = q.s.Room.MaxLoaded
	}
	due, over := q.dueAt(m)
	if due.IsZero() {
		return // fair_wait is off: busy models are never drained for a load
	}
	drain, ok := Drain(views, need, q.s.Room, m.ID)
	if !over {
		if ok && len(drain) > 0 {
			w.DrainAt = due
			w.Turn = true
		}
		q.wakeAt(due)
		return
	}
	for _, id := range drain { // nil unless draining makes it fit
		if v := q.byID[id]; !v.Draining {
			v.Draining, v.DrainFor = true, m.ID
			q.add(Step{Op: OpDrain, Model: id, For: m.ID})
		}
	}
	w.Victims = q.others(m.ID, func(o *Model) bool { return o.Draining && o.DrainFor == m.ID && o.Phase != Stopping })
	w.Turn = len(w.Victims) > 0
}

// admit hands m's waiters leases (op: OpAdmit, or OpWake for a sleeping model woken for them).
func (q *pass) admit(m *Model, op Op) {
	if n := q.dequeue(m.ID); n > 0 {
		m.Leases += n
		m.LastUsed = q.s.Now
	}
	q.add(Step{Op: op, Model: m.ID})
}

func (q *pass) fail(m *Model, why Why, need Mem) {
	q.dequeue(m.ID)
	q.add(Step{Op: OpFail, Model: m.ID, Why: why, Need: need})
}

// wait gives m its reason of kind k: need is what its load needs, views the snapshot the decision was
// made over (loads booked ahead of it included). The caller fills in the kind's own fields.
func (q *pass) wait(m *Model, k WaitKind, need Mem, views []Model) *Wait {
	q.pos++
	w := &Wait{Kind: k, Position: q.pos, Since: q.first[m.ID], Need: need, Free: Free(views, q.s.Room.Budget),
		Turn: k == WaitLoading || k == WaitStopping || k == WaitDraining || k == WaitMemory}
	q.waits[m.ID] = w
	if k == WaitBusy {
		w.BusySince = q.s.Now
		if !m.BusySince.IsZero() {
			w.BusySince = m.BusySince
		}
	}
	q.add(Step{Op: OpWait, Model: m.ID, Wait: w})
	return w
}

// booked is views with the loads decided but not started booked (Reserve).
func (q *pass) booked(views []Model) []Model {
	for _, id := range slices.Sorted(maps.Keys(q.reserved)) {
		views = Reserve(views, id, q.reserved[id])
	}
	return views
}

// others lists the models other than self that match, by ID: those stopping now, whose memory comes
// back for self, or those draining for self's queued requests (fair wait).
func (q *pass) others(self string, match func(*Model) bool) []string {
	var ids []string
	for _, m := range q.models {
		if m.ID != self && match(m) {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// loadingBeside is the first (by ID) other model loading, or waking (a sleeping child with leases
// reloads its weights), on a nearly full GPU device that m, needing need, would share, when m's
// child measures the devices' free memory as it starts: a child still loading has not allocated all
// it was promised, so m's child would count that memory as free for itself, and two children loading
// at once could together take more than the device has when their estimates run low. A device
// counts as nearly full when what would be left on it is less than 1/8 of what m and the loads there
// need (as far as an estimate is trusted to be off). "" when there is none.
func (q *pass) loadingBeside(m *Model, need Mem) string {
	if !m.Measures {
		return ""
	}
	var ids []string
	for i := 0; i < q.s.Devices && i < MaxGPUs; i++ {
		if need.GPU[i] == 0 {
			continue
		}
		var loading []string
		promised := int64(0)
		free := q.s.DeviceFree[i] // less what every other running model holds or is promised there
		for _, o := range q.models {
			if o == m || o.Phase > Stopping {
				continue
			}
			free -= o.Held.GPU[i]
			waking := o.Phase == Sleeping && o.Leases > 0
			if (o.Phase == Loading || waking) && o.Held.GPU[i] > 0 {
				loading = append(loading, o.ID)
				promised += o.Held.GPU[i]
			}
		}
		if len(loading) > 0 && free-need.GPU[i] < (need.GPU[i]+promised)/8 {
			ids = append(ids, loading...)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return slices.Min(ids)
}

// shieldAhead keeps the queued mark (never a victim) only on the models whose requests are queued
// ahead of the one being planned: first come, first served, so a load queued first may evict a
// sleeping model whose wake was asked for after it rather than wait behind it.
func shieldAhead(views []Model, ahead []*Model) []Model {
	for i := range views {
		if views[i].Queued > 0 && !slices.ContainsFunc(ahead, func(m *Model) bool { return m.ID == views[i].ID }) {
			views[i].Queued = 0
		}
	}
	return views
}
