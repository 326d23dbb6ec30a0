package engine

import "github.com/llamatray/llamatray/router/fit"

// Room is the room a new model's fit is judged against, from the engine's budget and models now.
func (e *Engine) Room() fit.Room { return RoomOf(e.Budget(), e.Models()) }

// RoomOf is the room that budget b and models leave: the whole budget, what no model holds, and
// what idle models (loaded, serving nothing, not pinned) hold.
func RoomOf(b Budget, models []ModelStatus) fit.Room {
	r := fit.Room{Limit: b.Limit, Free: b.Free}
	for _, st := range models {
		if st.State.Running() && st.Active == 0 && st.Queued == 0 && !st.Pinned {
			r.Idle += max(st.MemoryBytes, st.EstimateBytes)
		}
	}
	return r
}
