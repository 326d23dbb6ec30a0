package sched

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Table tests of Plan: each row is a snapshot and the steps it must give, written as one line each
// (see stepText), and when Plan must run again. They cover FIFO, fair wait, fit waits, wakes in
// line, lowered limits, idle timers and the scheduling defects found at real scale (the engine's
// defects_test.go, policy_test.go, queue_test.go and fit_test.go drive the same cases end to end).

const mb = int64(1) << 20

func mib(n int64) Mem { return Mem{RAM: n * mb} }

// gpu is ram GiB of RAM and on each device its GiB.
func gpu(ram int64, dev ...int64) Mem {
	m := Mem{RAM: ram * gib}
	for i, d := range dev {
		m.GPU[i] = d * gib
	}
	return m
}

// loaded, sleeping, … are models of a snapshot in a phase, holding held and needing as much.
func mod(id string, ph Phase, held Mem) Model {
	return Model{ID: id, Phase: ph, Held: held, Plan: held, Need: held}
}
func off(id string, need Mem) Model { return Model{ID: id, Phase: Unloaded, Need: need} }

func with(m Model, f func(*Model)) Model { f(&m); return m }
func busy(m Model) Model                 { m.Leases++; return m }
func used(m Model, s int) Model          { m.LastUsed = at(s); return m }

// q is a queue: model ids, each arrived one second after the one before, from t0.
func q(ids ...string) []Waiter {
	out := make([]Waiter, len(ids))
	for i, id := range ids {
		out[i] = Waiter{Model: id, Enq: at(i)}
	}
	return out
}

func memText(m Mem) string {
	s := fmt.Sprintf("%g", float64(m.RAM)/float64(gib))
	if m.RAM%mb == 0 && m.RAM%gib != 0 {
		s = fmt.Sprintf("%dM", m.RAM/mb)
	}
	for i, g := range m.GPU {
		if g != 0 {
			s += fmt.Sprintf("/gpu%d=%g", i, float64(g)/float64(gib))
		}
	}
	return s
}

func secs(t time.Time) string { return fmt.Sprintf("%gs", t.Sub(t0).Seconds()) }

var whyText = map[Why]string{StopDrained: "drained", StopOverLimit: "over-limit", StopEvicted: "evicted", StopIdle: "idle",
	FailRemoved: "removed", FailRefused: "refused", FailBackoff: "backoff", FailTooLarge: "too-large"}

// stepText is one step as a row writes it: "start a", "stop b evicted for a", "wait a busy 1 …".
func stepText(st Step) string {
	switch st.Op {
	case OpTimeOut:
		return fmt.Sprintf("timeout %s#%d", st.Model, st.Waiter)
	case OpUndrain:
		return "undrain " + st.Model
	case OpStop:
		if st.For != "" {
			return "stop " + st.Model + " " + whyText[st.Why] + " for " + st.For
		}
		return "stop " + st.Model + " " + whyText[st.Why]
	case OpDrain:
		return "drain " + st.Model + " for " + st.For
	case OpStart:
		return "start " + st.Model
	case OpWake:
		return "wake " + st.Model
	case OpAdmit:
		return "admit " + st.Model
	case OpFail:
		if st.Why == FailTooLarge {
			return "fail " + st.Model + " too-large " + memText(st.Need)
		}
		return "fail " + st.Model + " " + whyText[st.Why]
	}
	w := st.Wait
	parts := []string{"wait", st.Model, string(w.Kind), fmt.Sprint(w.Position), "since=" + secs(w.Since), "need=" + memText(w.Need), "free=" + memText(w.Free)}
	if len(w.Victims) > 0 {
		parts = append(parts, "victims="+strings.Join(w.Victims, ","))
	}
	if len(w.Holders) > 0 {
		parts = append(parts, "holders="+strings.Join(w.Holders, ","))
	}
	if !w.BusySince.IsZero() {
		parts = append(parts, "busy-since="+secs(w.BusySince))
	}
	if !w.DrainAt.IsZero() {
		parts = append(parts, "drain-at="+secs(w.DrainAt))
	}
	if w.MaxLoaded > 0 {
		parts = append(parts, fmt.Sprintf("max-loaded=%d", w.MaxLoaded))
	}
	if w.Behind != "" {
		parts = append(parts, "behind="+w.Behind)
	}
	if w.Worker != "" {
		parts = append(parts, "worker="+w.Worker)
	}
	return strings.Join(parts, " ")
}

// state is a snapshot at now (seconds after t0) with a RAM budget of budget GiB, no configured limit
// and a 30 s fair wait.
func state(now int, budget int64, queue []Waiter, models ...Model) State {
	return State{Now: at(now), Room: Room{Budget: ram(budget)}, Limits: unlimited(), FairWait: 30 * time.Second, Models: models, Queue: queue}
}

func unlimited() Room {
	r := Room{Budget: Mem{RAM: 1 << 60}}
	for i := range r.Budget.GPU {
		r.Budget.GPU[i] = 1 << 60
	}
	return r
}

func tune(s State, f func(*State)) State { f(&s); return s }

func TestPlanRows(t *testing.T) {
	never := time.Time{}
	rows := []planRow{
		// FIFO and the plain cases.
		{"nothing queued, nothing to do", state(0, 8, nil, mod("a", Loaded, ram(4))), nil, never},
		{"a cold model that fits starts", state(0, 8, q("a"), off("a", ram(4))),
			[]string{"start a", "wait a loading 1 since=0s need=4 free=4"}, never},
		{"a loaded model's waiters get leases", state(0, 8, q("a", "a"), mod("a", Loaded, ram(4))),
			[]string{"admit a"}, never},
		{"a loading model's waiters wait for it, with the need it was started with", state(0, 8, q("a"), with(mod("a", Loading, ram(3)), func(m *Model) { m.Need = ram(5) })),
			[]string{"wait a loading 1 since=0s need=3 free=5"}, never},
		{"strict FIFO: a later load that would fit waits behind a blocked one",
			state(1, 8, q("a", "c"), busy(mod("b", Loaded, ram(6))), off("a", ram(4)), off("c", ram(1))),
			[]string{"wait a busy 1 since=0s need=4 free=2 holders=b busy-since=1s drain-at=30s", "wait c behind 2 since=1s need=1 free=2 behind=a"}, at(30)},
		{"loads in order, each booked before the next (concurrent cold starts)",
			state(0, 8, q("a", "b", "c"), off("a", ram(3)), off("b", ram(3)), off("c", ram(3))),
			[]string{"start a", "wait a loading 1 since=0s need=3 free=5", "start b", "wait b loading 2 since=1s need=3 free=2",
				"wait c busy 3 since=2s need=3 free=2 holders=a,b busy-since=0s"}, at(32)},
		{"a model ready for its request gets it before a later load can evict it (llama.cpp #28698)",
			state(0, 4, q("a", "b"), mod("a", Loaded, ram(4)), off("b", ram(4))),
			[]string{"admit a", "wait b busy 1 since=1s need=4 free=0 holders=a busy-since=0s drain-at=31s"}, at(31)},
		{"max_loaded full: the cap is what is full",
			tune(state(0, 64, q("b"), busy(mod("a", Loaded, ram(1))), off("b", ram(1))), func(s *State) { s.Room.MaxLoaded = 1 }),
			[]string{"wait b busy 1 since=0s need=1 free=63 holders=a busy-since=0s drain-at=30s max-loaded=1"}, at(30)},
		{"max_loaded full of loads: a cold start waits for them, no drain to wait for",
			tune(state(0, 64, q("a", "b"), off("a", ram(1)), off("b", ram(1))), func(s *State) { s.Room.MaxLoaded = 1 }),
			[]string{"start a", "wait a loading 1 since=0s need=1 free=63", "wait b busy 2 since=1s need=1 free=63 holders=a busy-since=0s max-loaded=1"}, at(31)},
		{"positions count only the models that wait",
			state(0, 8, q("x", "a", "b"), mod("x", Loaded, ram(2)), mod("a", Stopping, ram(2)), with(mod("b", Loading, ram(2)), func(m *Model) {})),
			[]string{"admit x", "wait a stopping 1 since=1s need=2 free=2", "wait b loading 2 since=2s need=2 free=2"}, never},
		{"a waiter of a model the snapshot lacks is passed over", state(0, 8, q("ghost", "a"), off("a", ram(1))),
			[]string{"start a", "wait a loading 1 since=1s need=1 free=7"}, never},

		// Memory: evictions, stopping models, too large.
		{"the least recently used idle model is evicted, its memory booked for the load",
			state(5, 8, q("a"), used(mod("c", Loaded, ram(4)), 2), used(mod("d", Loaded, ram(4)), 1), off("a", ram(4))),
			[]string{"stop d evicted for a", "wait a memory 1 since=0s need=4 free=0 victims=d"}, never},
		{"a victim's memory is booked for its load: a later load waits for memory too, not beside it",
			state(0, 8, q("a", "b"), mod("v", Loaded, ram(6)), off("a", ram(6)), off("b", ram(2))),
			[]string{"stop v evicted for a", "wait a memory 1 since=0s need=6 free=2 victims=v", "wait b memory 2 since=1s need=2 free=0 victims=v"}, never},
		{"never a busy, pinned, draining or loading model",
			state(0, 8, q("a"), busy(mod("b", Loaded, ram(2))), with(mod("p", Loaded, ram(2)), func(m *Model) { m.Pinned = true }),
				with(mod("d", Loaded, ram(2)), func(m *Model) { m.Draining, m.Leases = true, 1 }), mod("l", Loading, ram(1)), off("a", ram(3))),
			[]string{"wait a busy 1 since=0s need=3 free=1 holders=b,d,l,p busy-since=0s"}, at(30)},
		{"memory coming back from a model already stopping: wait for it",
			state(0, 8, q("a"), mod("v", Stopping, ram(6)), off("a", ram(4))),
			[]string{"wait a memory 1 since=0s need=4 free=2 victims=v"}, never},
		{"a model whose last child is stopping loads again once it is gone",
			state(0, 8, q("a"), mod("a", Stopping, ram(4))),
			[]string{"wait a stopping 1 since=0s need=4 free=4"}, never},
		{"too large for the whole budget: refused at once", state(0, 8, q("a"), off("a", ram(9))),
			[]string{"fail a too-large 9"}, never},
		{"a sleeper whose whole footprint is over the ceiling is refused at once, though its wake alone would fit",
			state(0, 8, q("s"), with(mod("s", Sleeping, ram(2)), func(m *Model) { m.Need = ram(9) })),
			[]string{"fail s too-large 9"}, never},
		{"short of memory now but within the ceiling: wait, don't refuse",
			tune(state(0, 4, q("a"), off("a", ram(6))), func(s *State) { s.Room.Ceiling = ram(16) }),
			[]string{"wait a busy 1 since=0s need=6 free=4 busy-since=0s"}, at(30)},
		{"a device limit is the device's budget: two models of 1 GiB never share a device limited to 1.5 GiB",
			tune(state(0, 64, q("b"), mod("a", Loaded, gpu(0, 1)), off("b", gpu(0, 1))), func(s *State) { s.Room.Budget.GPU[0], s.Devices = gib+gib/2, 1 }),
			[]string{"stop a evicted for b", "wait b memory 1 since=0s need=0/gpu0=1 free=64/gpu0=0.5 victims=a"}, never},
		{"a model over a device's limit is refused at once, whatever RAM is free",
			tune(state(0, 64, q("b"), off("b", gpu(0, 2))), func(s *State) { s.Room.Budget.GPU[0], s.Devices = gib+gib/2, 1 }),
			[]string{"fail b too-large 0/gpu0=2"}, never},
		{"learned footprints keep their VRAM: one GPU holds one of two 20 GiB models",
			tune(state(0, 64, q("a"), mod("b", Loaded, gpu(1, 20)), off("a", gpu(1, 20))), func(s *State) { s.Room.Budget.GPU[0] = 24 * gib; s.Devices = 1 }),
			[]string{"stop b evicted for a", "wait a memory 1 since=0s need=1/gpu0=20 free=63/gpu0=4 victims=b"}, never},
		{"budgets per device: 16 GiB free over two GPUs do not fit 4+4 beside 14 on the first",
			tune(state(0, 64, q("b"), busy(mod("a", Loaded, gpu(1, 14))), off("b", gpu(1, 4, 4))), func(s *State) {
				s.Room.Budget.GPU[0], s.Room.Budget.GPU[1], s.Devices = 16*gib, 16*gib, 2
			}),
			[]string{"wait b busy 1 since=0s need=1/gpu0=4/gpu1=4 free=63/gpu0=2/gpu1=16 holders=a busy-since=0s drain-at=30s"}, at(30)},
		{"a model on the other GPU is no victim: stopping it frees nothing where the load is short",
			tune(state(0, 64, q("b"), used(mod("x", Loaded, gpu(0, 0, 8)), 1), used(mod("y", Loaded, gpu(0, 12)), 2), off("b", gpu(0, 6))), func(s *State) {
				s.Room.Budget.GPU[0], s.Room.Budget.GPU[1], s.Devices = 16*gib, 16*gib, 2
			}),
			[]string{"stop y evicted for b", "wait b memory 1 since=0s need=0/gpu0=6 free=64/gpu0=4/gpu1=8 victims=y"}, never},

		// Failures.
		{"a removed model's waiters fail", state(0, 8, q("a"), with(off("a", ram(1)), func(m *Model) { m.Removed = true })),
			[]string{"fail a removed"}, never},
		{"a model its settings came to refuse while its requests waited fails them, and starts no child",
			state(0, 8, q("a", "b"), with(off("a", ram(1)), func(m *Model) { m.Refused = true }), with(mod("b", Loaded, ram(1)), func(m *Model) { m.Refused = true })),
			[]string{"fail a refused", "admit b"}, never},
		{"a failed model within its backoff fails its waiters", state(0, 8, q("a"), with(Model{ID: "a", Phase: Failed, Need: ram(1)}, func(m *Model) { m.RetryAt = at(1) })),
			[]string{"fail a backoff"}, never},
		{"a failed model past its backoff loads again", state(1, 8, q("a"), with(Model{ID: "a", Phase: Failed, Need: ram(1)}, func(m *Model) { m.RetryAt = at(1) })),
			[]string{"start a", "wait a loading 1 since=0s need=1 free=7"}, never},
		{"a request whose deadline passed during a load that failed times out, the load error aside",
			state(3, 8, []Waiter{{Model: "a", Enq: at(0), Late: true}, {Model: "a", Enq: at(2)}}, with(Model{ID: "a", Phase: Failed, Need: ram(1)}, func(m *Model) { m.RetryAt = at(4) })),
			[]string{"timeout a#0", "fail a backoff"}, never},
		{"a request whose deadline passed while its model still loads waits for the load",
			state(3, 8, []Waiter{{Model: "a", Enq: at(0), Late: true}}, mod("a", Loading, ram(1))),
			[]string{"wait a loading 1 since=0s need=1 free=7"}, never},

		// Fair wait.
		{"fair wait up: the busy LRU model drains for the load that waited",
			state(30, 8, q("a"), used(busy(mod("b", Loaded, ram(6))), 1), used(busy(mod("c", Loaded, ram(2))), 2), off("a", ram(6))),
			[]string{"wait a busy 1 since=0s need=6 free=0 victims=b holders=b,c busy-since=30s", "drain b for a"}, never},
		{"fair wait up and already draining: no second drain, the victims named",
			state(31, 8, q("a"), with(busy(mod("b", Loaded, ram(6))), func(m *Model) { m.Draining, m.DrainFor = true, "a" }), off("a", ram(6))),
			[]string{"wait a busy 1 since=0s need=6 free=2 victims=b holders=b busy-since=31s"}, never},
		{"fair wait cannot help (pinned): no drain time is promised, the timer still armed",
			state(1, 8, q("a"), busy(with(mod("p", Loaded, ram(6)), func(m *Model) { m.Pinned = true })), off("a", ram(6))),
			[]string{"wait a busy 1 since=0s need=6 free=2 holders=p busy-since=1s"}, at(30)},
		{"blocked since earlier: the busy reason keeps its time",
			state(9, 8, q("a"), busy(mod("b", Loaded, ram(6))), with(off("a", ram(6)), func(m *Model) { m.BusySince = at(3) })),
			[]string{"wait a busy 1 since=0s need=6 free=2 holders=b busy-since=3s drain-at=30s"}, at(30)},
		{"a drained model stops once its last lease ends",
			state(0, 8, q("a"), with(mod("b", Loaded, ram(6)), func(m *Model) { m.Draining, m.DrainFor = true, "a" }), off("a", ram(6))),
			[]string{"stop b drained", "wait a memory 1 since=0s need=6 free=2 victims=b"}, never},
		{"a drain whose requests are gone is called off (client left, deadline)",
			state(0, 8, nil, with(busy(mod("b", Loaded, ram(6))), func(m *Model) { m.Draining, m.DrainFor = true, "a" })),
			[]string{"undrain b"}, never},
		{"an asked-for drain outlasts the queue", state(0, 8, nil, with(busy(mod("b", Loaded, ram(6))), func(m *Model) { m.Draining = true })),
			nil, never},
		{"a request for a draining model waits: it loads again after",
			state(0, 8, q("b"), with(busy(mod("b", Loaded, ram(6))), func(m *Model) { m.Draining = true })),
			[]string{"wait b draining 1 since=0s need=6 free=2"}, never},
		{"a drain with a request for it queued stays",
			state(1, 8, q("a", "b"), with(busy(mod("b", Loaded, ram(6))), func(m *Model) { m.Draining, m.DrainFor = true, "a" }), off("a", ram(6))),
			[]string{"wait a busy 1 since=0s need=6 free=2 holders=b busy-since=1s", "wait b draining 2 since=1s need=6 free=2"}, at(30)},

		// Sleepers.
		{"a sleeper with room is woken and its waiters get leases",
			state(0, 8, q("s"), with(mod("s", Sleeping, ram(1)), func(m *Model) { m.Need = ram(4) })),
			[]string{"wake s"}, never},
		{"a sleeper's wake keeps its place in line behind a blocked load: no wake ahead of it, though it would fit",
			tune(state(1, 0, q("a", "s", "s"), used(with(mod("s", Sleeping, mib(10)), func(m *Model) { m.Need = mib(100) }), 0), busy(mod("y", Loaded, mib(150))), off("a", mib(200))),
				func(s *State) { s.Room.Budget = mib(250) }),
			[]string{"wait a busy 1 since=0s need=200M free=90M holders=y busy-since=1s drain-at=30s", "wait s behind 2 since=1s need=100M free=90M behind=a"}, at(30)},
		{"a sleeping waiter first in line is woken when room comes, not evicted for a load queued after it",
			tune(state(0, 0, q("s", "b"), used(with(mod("s", Sleeping, mib(10)), func(m *Model) { m.Need = mib(100) }), 0), used(mod("x", Loaded, mib(100)), 1),
				used(busy(mod("y", Loaded, mib(100))), 2), off("b", mib(100))), func(s *State) { s.Room.Budget = mib(290) }),
			[]string{"stop x evicted for s", "wait s memory 1 since=0s need=90M free=80M victims=x",
				"wait b busy 2 since=1s need=100M free=0 holders=s,y busy-since=0s drain-at=31s"}, at(31)},
		{"queued later is no shield: a load queued first evicts a sleeper asked for after it",
			tune(state(0, 0, q("b", "s"), used(with(mod("s", Sleeping, mib(10)), func(m *Model) { m.Need = mib(110) }), 0), used(mod("y", Loaded, mib(100)), 1), off("b", mib(195))),
				func(s *State) { s.Room.Budget = mib(200) }),
			[]string{"stop s evicted for b", "stop y evicted for b", "wait b memory 1 since=0s need=195M free=90M victims=s,y", "wait s stopping 2 since=1s need=110M free=0"}, never},
		{"a queued sleeper is not stopped by its idle timer",
			tune(state(10, 0, q("s"), with(mod("s", Sleeping, mib(10)), func(m *Model) { m.Need, m.UnloadAfter = mib(100), 5*time.Second }), busy(mod("y", Loaded, mib(150)))),
				func(s *State) { s.Room.Budget = mib(240) }),
			[]string{"wait s busy 1 since=0s need=90M free=80M holders=y busy-since=10s drain-at=30s"}, at(30)},

		// Idle timers.
		{"an idle model past its idle time stops", state(10, 8, nil, with(mod("a", Loaded, ram(1)), func(m *Model) { m.UnloadAfter = 10 * time.Second })),
			[]string{"stop a idle"}, never},
		{"an idle model before its idle time arms the timer", state(4, 8, nil, with(used(mod("a", Sleeping, ram(1)), 2), func(m *Model) { m.UnloadAfter = 10 * time.Second })),
			nil, at(12)},
		{"busy and pinned models have no idle timer",
			state(99, 8, nil, busy(with(mod("a", Loaded, ram(1)), func(m *Model) { m.UnloadAfter = time.Second })), with(mod("p", Loaded, ram(1)), func(m *Model) { m.UnloadAfter, m.Pinned = time.Second, true })),
			nil, never},
		{"the timer is the earliest of a fair-wait due and an idle due",
			state(1, 8, q("a"), busy(mod("b", Loaded, ram(6))), off("a", ram(6)), with(used(mod("i", Loaded, ram(1)), 1), func(m *Model) { m.UnloadAfter = 5 * time.Second })),
			[]string{"wait a busy 1 since=0s need=6 free=1 holders=b busy-since=1s drain-at=30s"}, at(6)},

		// Lowered limits.
		{"lowered max_loaded stops idle models, least recently used first",
			tune(state(0, 64, nil, used(mod("a", Loaded, ram(1)), 1), used(mod("b", Loaded, ram(1)), 2), used(mod("c", Loaded, ram(1)), 3)), func(s *State) { s.Limits.MaxLoaded = 1 }),
			[]string{"stop a over-limit", "stop b over-limit"}, never},
		{"a lowered memory limit stops idle models until the rest fits; busy and pinned stay",
			tune(state(0, 64, nil, used(mod("a", Loaded, ram(1)), 1), used(busy(mod("busy", Loaded, ram(1))), 2), used(with(mod("pinned", Loaded, ram(1)), func(m *Model) { m.Pinned = true }), 3), used(mod("d", Loaded, ram(1)), 4)),
				func(s *State) { s.Limits.Budget.RAM = 2*gib + gib/2 }),
			[]string{"stop a over-limit", "stop d over-limit"}, never},
		{"a lowered device limit stops the idle model on that device",
			tune(state(0, 64, nil, used(mod("a", Loaded, gpu(1, 1)), 1), used(mod("b", Loaded, gpu(1, 1)), 2)), func(s *State) { s.Limits.Budget.GPU[0] = gib + gib/2 }),
			[]string{"stop a over-limit"}, never},

		// Fit waits: a child that measures the devices' free memory as it starts.
		{"a --fit load on a nearly full device waits for the load beside it, and the later loads wait their turn",
			tune(state(0, 64, q("b", "c"), mod("a", Loading, gpu(1, 4)), with(off("b", gpu(1, 4)), func(m *Model) { m.Measures = true }), with(off("c", gpu(1, 1)), func(m *Model) { m.Measures = true })),
				func(s *State) { s.Room.Budget.GPU[0], s.Devices, s.DeviceFree[0] = 8*gib+gib/2, 1, 8*gib+gib/2 }),
			[]string{"wait b behind 1 since=0s need=1/gpu0=4 free=63/gpu0=4.5 behind=a", "wait c behind 2 since=1s need=1/gpu0=1 free=63/gpu0=4.5 behind=b"}, never},
		{"a child that measures nothing (the user's -ngl) starts beside a load",
			tune(state(0, 64, q("b"), mod("a", Loading, gpu(1, 4)), off("b", gpu(1, 4))), func(s *State) { s.Room.Budget.GPU[0], s.Devices, s.DeviceFree[0] = 9*gib, 1, 9*gib }),
			[]string{"start b", "wait b loading 1 since=0s need=1/gpu0=4 free=62/gpu0=1"}, never},
		{"a --fit load on a device with room to spare starts beside a load",
			tune(state(0, 64, q("b"), mod("a", Loading, gpu(1, 4)), with(off("b", gpu(1, 4)), func(m *Model) { m.Measures = true })),
				func(s *State) { s.Room.Budget.GPU[0], s.Devices, s.DeviceFree[0] = 24*gib, 1, 24*gib }),
			[]string{"start b", "wait b loading 1 since=0s need=1/gpu0=4 free=62/gpu0=16"}, never},
		{"a --fit load waits for a sleeper waking beside it on a nearly full device",
			tune(state(0, 64, q("a", "b"), with(mod("a", Sleeping, gpu(1, 0)), func(m *Model) { m.Need = gpu(1, 4) }), with(off("b", gpu(1, 4)), func(m *Model) { m.Measures = true })),
				func(s *State) { s.Room.Budget.GPU[0], s.Devices, s.DeviceFree[0] = 8*gib+gib/2, 1, 8*gib+gib/2 }),
			[]string{"wake a", "wait b behind 1 since=1s need=1/gpu0=4 free=63/gpu0=4.5 behind=a"}, never},
	}
	runPlanRows(t, rows)
}

// Plan changes nothing in the snapshot it is given, and gives the same steps for the same snapshot.
func TestPlanIsPure(t *testing.T) {
	s := state(30, 8, q("a", "b", "s"), used(busy(mod("x", Loaded, ram(6))), 1), off("a", ram(6)), off("b", ram(1)),
		with(mod("s", Sleeping, ram(1)), func(m *Model) { m.Need = ram(2) }), with(mod("i", Loaded, ram(1)), func(m *Model) { m.UnloadAfter = time.Second }))
	before := tune(s, func(c *State) { c.Models, c.Queue = slices.Clone(s.Models), slices.Clone(s.Queue) })
	steps1, next1 := Plan(s)
	steps2, next2 := Plan(s)
	if !reflect.DeepEqual(s, before) {
		t.Fatalf("Plan changed its snapshot:\n%+v\nwant\n%+v", s, before)
	}
	if !reflect.DeepEqual(steps1, steps2) || !next1.Equal(next2) || len(steps1) == 0 {
		t.Fatalf("Plan gave %v then %v", steps1, steps2)
	}
}

// planRow is one row of Plan's tables: a snapshot, the steps Plan must return (as stepText writes
// them) and the next time it must ask to be run again.
type planRow struct {
	name  string
	state State
	want  []string
	next  time.Time
}

// runPlanRows runs each row as a subtest.
func runPlanRows(t *testing.T, rows []planRow) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			steps, next := Plan(r.state)
			var got []string
			for _, st := range steps {
				got = append(got, stepText(st))
			}
			if !slices.Equal(got, r.want) {
				t.Errorf("steps:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(r.want, "\n  "))
			}
			if !next.Equal(r.next) {
				t.Errorf("next %v, want %v", next, r.next)
			}
		})
	}
}
