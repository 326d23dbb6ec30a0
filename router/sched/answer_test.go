package sched

import (
	"testing"
	"time"
)

// Rows of the request fast path: what a new request gets at once.
func TestAnswerRows(t *testing.T) {
	sleeper := with(mod("s", Sleeping, ram(1)), func(m *Model) { m.Need = ram(4) })
	failed := with(Model{ID: "f", Phase: Failed, Need: ram(1)}, func(m *Model) { m.RetryAt = at(5) })
	rows := []struct {
		name   string
		m      Model
		views  []Model
		budget int64
		queued bool
		now    int
		want   string
	}{
		{"a loaded model: a lease", mod("a", Loaded, ram(1)), nil, 8, true, 0, "admit a"},
		{"loaded but draining: queued", with(mod("a", Loaded, ram(1)), func(m *Model) { m.Draining = true }), nil, 8, false, 0, "wait"},
		{"loaded but removed: queued (the plan fails it)", with(mod("a", Loaded, ram(1)), func(m *Model) { m.Removed = true }), nil, 8, false, 0, "wait"},
		{"refused with no process: fails", with(off("a", ram(1)), func(m *Model) { m.Refused = true }), nil, 8, false, 0, "fail a refused"},
		{"refused but running: it still serves", with(mod("a", Loaded, ram(1)), func(m *Model) { m.Refused = true }), nil, 8, false, 0, "admit a"},
		{"a sleeper whose wake fits, nothing queued: woken", sleeper, []Model{{ID: "s", Phase: Sleeping, Held: ram(1)}}, 8, false, 0, "wake s"},
		{"a sleeper with requests queued takes its place in line", sleeper, []Model{{ID: "s", Phase: Sleeping, Held: ram(1)}}, 8, true, 0, "wait"},
		{"a sleeper whose wake does not fit: queued", sleeper, []Model{{ID: "s", Phase: Sleeping, Held: ram(1)}, {ID: "b", Phase: Loaded, Held: ram(6), Leases: 1}}, 8, false, 0, "wait"},
		{"failed within its backoff: fails", failed, nil, 8, false, 4, "fail f backoff"},
		{"failed, backoff passed: queued to load again", failed, nil, 8, false, 5, "wait"},
		{"removed and failed within its backoff: fails", with(failed, func(m *Model) { m.Removed = true }), nil, 8, false, 4, "fail f backoff"},
		{"unloaded: queued", off("a", ram(1)), nil, 8, false, 0, "wait"},
		{"loading: queued", mod("a", Loading, ram(1)), nil, 8, false, 0, "wait"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			st := Answer(r.m, r.views, Room{Budget: ram(r.budget)}, r.queued, at(r.now))
			got := "wait"
			if st.Op != OpWait {
				got = stepText(st)
			}
			if got != r.want {
				t.Errorf("%s, want %s", got, r.want)
			}
		})
	}
}

// Rows of Settled: a lease taken or given back that calls for no new plan.
func TestSettledRows(t *testing.T) {
	leased := busy(mod("a", Loaded, ram(1)))
	rows := []struct {
		name   string
		m      Model
		queued bool
		want   bool
	}{
		{"loaded, still leased, nothing queued: settled", leased, false, true},
		{"a request is queued: its reason and busy time are the plan's", leased, true, false},
		{"the last lease given back: idle, the plan evicts or times it", mod("a", Loaded, ram(1)), false, false},
		{"draining: the plan stops it once its last lease goes", with(leased, func(m *Model) { m.Draining = true }), false, false},
		{"removed: the plan stops it once its last lease goes", with(leased, func(m *Model) { m.Removed = true }), false, false},
		{"sleeping with a lease (waking): the plan books its wake", busy(mod("a", Sleeping, ram(1))), false, false},
	}
	for _, r := range rows {
		if got := Settled(r.m, r.queued); got != r.want {
			t.Errorf("%s: Settled = %v, want %v", r.name, got, r.want)
		}
	}
}

// Rows of Expire: what a waiting request's passing queue deadline does.
func TestExpireRows(t *testing.T) {
	const fair = 30 * time.Second
	rows := []struct {
		name     string
		m        Model
		turn     bool
		fairWait time.Duration
		want     Deadline
	}{
		{"its model is loading: the load answers it", mod("a", Loading, ram(1)), false, fair, DeadlineLate},
		{"loading, even while waiting its turn", mod("a", Loading, ram(1)), true, fair, DeadlineLate},
		{"waiting its turn: fair_wait more", off("a", ram(1)), true, fair, DeadlineExtend},
		{"waiting its turn, fair_wait off: times out", off("a", ram(1)), true, -1, DeadlineTimeOut},
		{"waiting on memory nothing frees: times out", off("a", ram(1)), false, fair, DeadlineTimeOut},
		{"behind a sleeper, not its turn: times out", mod("a", Sleeping, ram(1)), false, fair, DeadlineTimeOut},
	}
	for _, r := range rows {
		if got := Expire(r.m, r.turn, r.fairWait); got != r.want {
			t.Errorf("%s: Expire = %v, want %v", r.name, got, r.want)
		}
	}
}
