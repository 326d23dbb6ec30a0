// Package sched holds every scheduling decision of Llamatray's as a pure function over one snapshot
// type (Model): the queue's plan (Plan), what a new request gets at once (Answer, Settled, Expire),
// whether a model fits, which idle models to evict for it, which busy ones to drain when a queued load
// has waited too long, which to unload under memory pressure (Pressure), and each child's device
// shares (Margins). It performs no I/O and keeps no state; the engine gathers the snapshot and acts
// on what it returns.
package sched

import (
	"slices"
	"strings"
	"time"
)

// MaxGPUs is how many GPU devices a Mem keeps apart. The engine numbers the machine's devices in the
// order it discovered them; devices beyond the last are never used.
const MaxGPUs = 8

// Mem is an amount of memory: host RAM, and the memory of each GPU device on its own. Budgets are per
// device, never summed: 10 GiB free on each of two GPUs does not fit one model that needs 16 GiB on
// the first.
type Mem struct {
	RAM int64
	GPU [MaxGPUs]int64 // per device, indexed as the engine numbers them
}

// Add returns m+o.
func (m Mem) Add(o Mem) Mem {
	m.RAM += o.RAM
	for i := range m.GPU {
		m.GPU[i] += o.GPU[i]
	}
	return m
}

// Sub returns m-o.
func (m Mem) Sub(o Mem) Mem {
	m.RAM -= o.RAM
	for i := range m.GPU {
		m.GPU[i] -= o.GPU[i]
	}
	return m
}

// Max returns the larger of m and o in each dimension.
func (m Mem) Max(o Mem) Mem {
	m.RAM = max(m.RAM, o.RAM)
	for i := range m.GPU {
		m.GPU[i] = max(m.GPU[i], o.GPU[i])
	}
	return m
}

// VRAM is what m holds over all GPU devices together (for display only: budgets are per device).
func (m Mem) VRAM() int64 {
	var n int64
	for _, v := range m.GPU {
		n += v
	}
	return n
}

// Total is RAM and every device together (for display only).
func (m Mem) Total() int64 { return m.RAM + m.VRAM() }

// Within reports whether m fits in room in every dimension: RAM and each device on its own.
func (m Mem) Within(room Mem) bool {
	if m.RAM > room.RAM {
		return false
	}
	for i, v := range m.GPU {
		if v > room.GPU[i] {
			return false
		}
	}
	return true
}

// Split divides gpu bytes of GPU memory over the devices the way llama.cpp's default layer split
// does: in proportion to each device's share (its memory), whole layers at a time. layers is how many
// layers the child offloads (0 or less: split the bytes exactly). Devices with no share get nothing;
// with no device at all the bytes are RAM.
func Split(ram, gpu int64, layers int, shares []int64) Mem {
	var sum int64
	n := 0
	for i, s := range shares {
		if i < MaxGPUs && s > 0 {
			sum += s
			n = i + 1
		}
	}
	if gpu <= 0 || sum == 0 {
		return Mem{RAM: ram + max(gpu, 0)}
	}
	out := Mem{RAM: ram}
	if layers <= 0 {
		var given int64
		for i := 0; i < n; i++ {
			if shares[i] > 0 {
				out.GPU[i] = int64(float64(gpu) * float64(shares[i]) / float64(sum))
				given += out.GPU[i]
			}
		}
		out.GPU[n-1] += gpu - given
		return out
	}
	// Whole layers: device i takes the layers up to its cumulative share, as llama.cpp assigns them.
	perLayer := float64(gpu) / float64(layers)
	var cum int64
	done := 0
	var given int64
	for i := 0; i < n; i++ {
		if shares[i] <= 0 {
			continue
		}
		cum += shares[i]
		upto := int(float64(layers)*float64(cum)/float64(sum) + 0.5)
		if i == n-1 {
			upto = layers
		}
		out.GPU[i] = int64(perLayer * float64(upto-done))
		given += out.GPU[i]
		done = upto
	}
	out.GPU[n-1] += gpu - given
	return out
}

// Phase is what a running model is doing, as far as scheduling is concerned.
type Phase int

// The phases of a model that holds (or is about to hold) a child process.
const (
	Loading  Phase = iota // starting; counts fully, never evicted
	Loaded                // ready
	Sleeping              // process kept, weights freed
	Stopping              // going away; its memory is about to come back
	Unloaded              // no process
	Failed                // its last load failed; no process
)

// Reserve returns views with need booked for model id, once: added to what id holds when it is in
// views (a sleeping model about to wake), else as a model about to load. The input is not changed.
func Reserve(views []Model, id string, need Mem) []Model {
	out := append([]Model(nil), views...)
	for i := range out {
		if out[i].ID == id {
			out[i].Held = out[i].Held.Add(need)
			out[i].Queued = max(out[i].Queued, 1)
			return out
		}
	}
	return append(out, Model{ID: id, Phase: Loading, Held: need, Queued: 1})
}

// UnloadDue says when a model's idle-unload timer (UnloadAfter, <=0 off) stops it: only a loaded or
// sleeping model with no lease, no queued request, not pinned and not draining, counting from its
// last use.
func UnloadDue(v Model) (time.Time, bool) {
	if v.UnloadAfter <= 0 || !evictable(v) {
		return time.Time{}, false
	}
	return v.LastUsed.Add(v.UnloadAfter), true
}

// evictable is whether v may be stopped to make room, or by a timer or memory pressure: loaded or
// sleeping, no lease, no queued request, not pinned, not draining, not serving.
func evictable(v Model) bool {
	return v.Leases == 0 && v.Queued == 0 && !v.Pinned && !v.Draining && !v.Serving && (v.Phase == Loaded || v.Phase == Sleeping)
}

// Room is the budget: the memory all models together may hold now, the most it can ever be, and the
// cap on running models. The budget moves with the memory other programs use; the ceiling does not.
type Room struct {
	Budget    Mem
	Ceiling   Mem // zero: the budget is the ceiling
	MaxLoaded int // 0 = no cap
}

// ceiling is the most the budget can ever be: Ceiling, or Budget when no ceiling is set.
func (r Room) ceiling() Mem {
	if r.Ceiling == (Mem{}) {
		return r.Budget
	}
	return r.Ceiling
}

// Decision is the outcome of Fit for one model that needs memory.
type Decision struct {
	Start    bool     // it fits now: start it
	Victims  []string // stop these idle models first; it fits once they are gone
	Wait     bool     // it will fit once models already stopping are gone
	Blocked  bool     // it does not fit even with every idle model gone: wait for leases to drop
	TooLarge bool     // it can never fit, even with every model gone and the whole ceiling free
}

// Fit decides what to do for model self, which needs `need` more memory than it holds now. Models in
// views other than self are the competition. Victims are idle (no lease, no queued request),
// unpinned, not draining, loaded or sleeping models, least recently used first, counting what each
// really holds. Loads already decided are in views through Reserve.
func Fit(views []Model, need Mem, room Room, self string) Decision {
	if !need.Within(room.ceiling()) {
		return Decision{TooLarge: true, Blocked: true}
	}
	if _, ok := makeRoom(views, need, room, self, func(Model) bool { return false }, nil); ok {
		return Decision{Start: true}
	}
	stopping := func(v Model) bool { return v.Phase == Stopping }
	victims, ok := makeRoom(views, need, room, self, stopping, Idle(views, self))
	switch {
	case ok && len(victims) == 0:
		return Decision{Wait: true}
	case ok:
		return Decision{Victims: victims}
	}
	return Decision{Blocked: true}
}

// makeRoom picks from cands, in order, the models to stop until self, needing need, fits in room
// within memory and the slot cap: once they and the models gone says are going are gone, what views
// leave free. A candidate that holds nothing where self is short (another GPU) is skipped, unless a
// slot is what is short. ok is whether self fits then.
func makeRoom(views []Model, need Mem, room Room, self string, gone func(Model) bool, cands []Model) (picked []string, ok bool) {
	var used, freed Mem
	left, selfRunning := 0, false
	for _, v := range views {
		used = used.Add(v.Held)
		switch {
		case v.ID == self:
			selfRunning = true
		case gone(v):
			freed = freed.Add(v.Held)
		default:
			left++
		}
	}
	free := room.Budget.Sub(used)
	slotOK := func() bool { return room.MaxLoaded <= 0 || selfRunning || left+1 <= room.MaxLoaded }
	for _, v := range cands {
		if need.Within(free.Add(freed)) && slotOK() {
			break
		}
		if slotOK() && !helps(v.Held, need, free.Add(freed)) {
			continue
		}
		picked = append(picked, v.ID)
		freed = freed.Add(v.Held)
		left--
	}
	return picked, need.Within(free.Add(freed)) && slotOK()
}

// helps is whether giving back held makes progress towards need in room: it frees memory in a
// dimension (RAM or a device) where need is over what room has.
func helps(held, need, room Mem) bool {
	if need.RAM > room.RAM && held.RAM > 0 {
		return true
	}
	for i := range need.GPU {
		if need.GPU[i] > room.GPU[i] && held.GPU[i] > 0 {
			return true
		}
	}
	return false
}

// Idle lists the models that may be evicted, least recently used first (ties by ID): loaded or
// sleeping, no lease, no queued request, not pinned, not draining, and not self.
func Idle(views []Model, self string) []Model {
	out := make([]Model, 0, len(views))
	for _, v := range views {
		if v.ID != self && evictable(v) {
			out = append(out, v)
		}
	}
	sortLRU(out)
	return out
}

func sortLRU(vs []Model) {
	slices.SortStableFunc(vs, func(a, b Model) int {
		if c := a.LastUsed.Compare(b.LastUsed); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// Drain is the starvation guard: a load for self has waited too long behind busy models. It returns
// the busy (or serving), unpinned, loaded or sleeping models to drain (least recently used first) so
// that, once they and every idle model are gone, self fits. ok is false when even draining every busy
// unpinned model cannot make it fit.
func Drain(views []Model, need Mem, room Room, self string) (drain []string, ok bool) {
	gone := func(v Model) bool { return v.Phase == Stopping || v.Draining || evictable(v) }
	var busy []Model
	for _, v := range views {
		if v.ID != self && !gone(v) && (v.Leases > 0 || v.Serving) && !v.Pinned && (v.Phase == Loaded || v.Phase == Sleeping) {
			busy = append(busy, v)
		}
	}
	sortLRU(busy)
	if drain, ok = makeRoom(views, need, room, self, gone, busy); !ok {
		return nil, false
	}
	return drain, true
}

// Pressure picks idle (no lease, no queued request), unpinned models to unload, least recently used
// first, when the system's available RAM is below reserve (<= 0: off) because other programs grew:
// until what they hold covers the deficit, what is short less what the models already stopping
// hold. It returns what it picked, the deficit (<= 0: no pressure) and what they hold together; when
// every idle model is not enough, it returns them all.
func Pressure(models []Model, available, reserve int64) (ids []string, deficit, freed int64) {
	if reserve <= 0 || available >= reserve {
		return nil, 0, 0
	}
	deficit = reserve - available
	for _, v := range models {
		if v.Phase == Stopping {
			deficit -= v.Held.RAM
		}
	}
	if deficit <= 0 {
		return nil, deficit, 0
	}
	for _, v := range Idle(models, "") {
		if freed >= deficit {
			break
		}
		ids = append(ids, v.ID)
		freed += v.Held.RAM
	}
	return ids, deficit, freed
}

// Excess picks idle models to stop, least recently used first, until the models that stay (all but
// those stopping) fit room's budget and slot cap: what a lowered memory limit or max_loaded calls
// for. Busy, pinned, draining, loading and queued models stay, even when they alone exceed it.
func Excess(views []Model, room Room) []string {
	var used Mem
	n := 0
	for _, v := range views {
		if v.Phase != Stopping {
			used = used.Add(v.Held)
			n++
		}
	}
	over := func() bool { return !used.Within(room.Budget) || (room.MaxLoaded > 0 && n > room.MaxLoaded) }
	if !over() {
		return nil // the usual case: nothing to list
	}
	var out []string
	for _, v := range Idle(views, "") {
		if !over() {
			break
		}
		out = append(out, v.ID)
		used = used.Sub(v.Held)
		n--
	}
	return out
}

// FitFloor is the least margin a child is asked to leave free on a device (Margins).
const FitFloor = 128 << 20

// Margins are self's device shares as llama.cpp's --fit-target takes them: on each device of free,
// the bytes its child must leave free so that it holds no more there than the share planned for it
// (self's Held), when the child decides its offload itself and could otherwise take a neighbour's
// memory. free[i] is what device i has free for models (State.DeviceFree), less what every other
// model holding a process holds or is promised there; on unified memory (Metal) a child sees the
// whole working set as its own, so free[i] is the working set and nothing is taken off. Each margin
// is free less the share, at least FitFloor.
func Margins(models []Model, self string, free []int64, unified bool) []int64 {
	var share Mem
	out := slices.Clone(free)
	for _, m := range models {
		switch {
		case m.ID == self:
			share = m.Held
		case !unified && m.Phase <= Stopping:
			for i := range out {
				out[i] -= m.Held.GPU[i]
			}
		}
	}
	for i := range out {
		out[i] = max(out[i]-share.GPU[i], FitFloor)
	}
	return out
}

// Free is what budget leaves after every model in views holds what it holds (loads booked through
// Reserve included), never below zero in any dimension.
func Free(views []Model, budget Mem) Mem {
	free := budget
	for _, v := range views {
		free = free.Sub(v.Held)
	}
	return free.Max(Mem{})
}

// Holders lists the models other than self that hold memory and cannot be unloaded for it now: busy,
// pinned, draining or loading — every model that is neither idle nor already stopping — by ID.
func Holders(views []Model, self string) []string {
	var out []string
	for _, v := range views {
		if v.ID != self && v.Phase != Stopping && !evictable(v) {
			out = append(out, v.ID)
		}
	}
	slices.Sort(out)
	return out
}
