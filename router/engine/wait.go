package engine

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/llamatray/llamatray/router/sched"
)

// Why a request waits: reconcile, which decides for every queued model in turn, leaves each one's
// reason on the model (model.wait) as it decides; status copies it out. Nothing here decides.

// waits collects the reasons of one reconcile pass: positions are given in queue order to the models
// still waiting, and models that no longer wait lose their reason when the pass ends.
type waits struct {
	e     *Engine
	now   time.Time
	first map[string]time.Time // each queued model's first waiter's enqueue time
	pos   int
	set   map[*model]bool
}

func (e *Engine) newWaits(now time.Time, first map[string]time.Time) *waits {
	return &waits{e: e, now: now, first: first, set: map[*model]bool{}}
}

// add gives m its reason of kind k: need is what its load needs, views the snapshot the decision was
// made over (loads booked ahead of it included). The caller fills in the kind's own fields. Called
// with mu held.
func (ws *waits) add(m *model, k WaitKind, need sched.Mem, views []sched.View) *WaitReason {
	e := ws.e
	ws.pos++
	free := sched.Free(views, e.room().Budget)
	w := &WaitReason{Kind: k, Position: ws.pos, Since: ws.first[m.id], Need: e.shown(need), NeedGPU: e.deviceBytes(need),
		Free: e.shown(free), FreeGPU: e.freeDevices(free)}
	prev := m.wait
	if k == WaitBusy {
		w.BusySince = ws.now
		if prev != nil && prev.Kind == WaitBusy {
			w.BusySince = prev.BusySince
		}
	}
	m.wait = w
	ws.set[m] = true
	if prev == nil || prev.Kind != w.Kind || prev.Position != w.Position {
		e.publish(Event{Kind: "queue", Model: m.id, State: m.state, Active: m.leases, Message: fmt.Sprintf("waiting: %s, %d in line", k, w.Position)})
	}
	return w
}

// done clears the reason of every model that does not wait any more. Called with mu held.
func (ws *waits) done() {
	for _, m := range ws.e.models {
		if !ws.set[m] {
			m.wait = nil
		}
	}
}

// waitModels names the models ids, as a reason lists them. Called with mu held.
func (e *Engine) waitModels(ids []string) []WaitModel {
	var out []WaitModel
	for _, id := range ids {
		if m := e.models[id]; m != nil {
			out = append(out, WaitModel{ID: id, State: m.state, Active: m.leases, Pinned: m.pinned})
		}
	}
	return out
}

// stoppingFor lists the models stopping now, whose memory comes back for self. Called with mu held.
func (e *Engine) stoppingFor(self string) []string {
	var ids []string
	for id, m := range e.models {
		if id != self && m.state == StateStopping {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// drainingFor lists the busy models draining for self's queued requests (fair wait). Called with mu held.
func (e *Engine) drainingFor(self string) []string {
	var ids []string
	for id, m := range e.models {
		if m.draining && m.drainFor == self && m.state != StateStopping {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// freeDevices is free memory on each GPU device by name, zeros included. Called with mu held.
func (e *Engine) freeDevices(free sched.Mem) map[string]int64 {
	var out map[string]int64
	for i, g := range e.gpus() {
		if out == nil {
			out = map[string]int64{}
		}
		out[deviceName(g, i)] = free.GPU[i]
	}
	return out
}

// clone copies w, so a snapshot shares nothing with the engine.
func (w *WaitReason) clone() *WaitReason {
	c := *w
	c.NeedGPU, c.FreeGPU = maps.Clone(w.NeedGPU), maps.Clone(w.FreeGPU)
	c.Victims, c.Holders = slices.Clone(w.Victims), slices.Clone(w.Holders)
	return &c
}
