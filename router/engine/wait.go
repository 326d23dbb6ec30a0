package engine

import (
	"fmt"
	"maps"
	"slices"

	"github.com/llamatray/llamatray/router/sched"
)

// Why a request waits: sched.Plan, which decides for every queued model in turn, gives each one
// that still waits its reason (sched.Wait) as it decides; reconcile leaves it on the model
// (model.wait) in the engine's terms and status copies it out. Nothing here decides.

// setWait gives m the reason w that the plan decided, and publishes a queue event when its kind or
// its place in line changed. Called with mu held.
func (e *Engine) setWait(m *model, w *sched.Wait) {
	r := &WaitReason{Kind: w.Kind, Position: w.Position, Since: w.Since, Need: e.shown(w.Need), NeedGPU: e.deviceBytes(w.Need, false),
		Free: e.shown(w.Free), FreeGPU: e.deviceBytes(w.Free, true), Victims: e.waitModels(w.Victims), Holders: e.waitModels(w.Holders),
		BusySince: w.BusySince, DrainAt: w.DrainAt, MaxLoaded: w.MaxLoaded, Behind: w.Behind, Worker: w.Worker, Turn: w.Turn}
	prev := m.wait
	m.wait = r
	if prev == nil || prev.Kind != r.Kind || prev.Position != r.Position {
		e.publish(Event{Kind: EventQueue, Model: m.id, State: m.state, Active: m.leases, Queued: e.queued(m.id), Wait: r.Kind, Position: r.Position,
			Message: fmt.Sprintf("waiting: %s, %d in line", r.Kind, r.Position)})
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

// clone copies w, so a snapshot shares nothing with the engine.
func (w *WaitReason) clone() *WaitReason {
	c := *w
	c.NeedGPU, c.FreeGPU = maps.Clone(w.NeedGPU), maps.Clone(w.FreeGPU)
	c.Victims, c.Holders = slices.Clone(w.Victims), slices.Clone(w.Holders)
	return &c
}
