package sched

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

const gib = int64(1) << 30

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
func ram(g int64) Mem    { return Mem{RAM: g * gib} }

func TestFit(t *testing.T) {
	room8 := Room{Budget: ram(8)}
	tests := []struct {
		name  string
		views []Model
		need  Mem
		room  Room
		self  string
		want  Decision
	}{
		{"empty fits", nil, ram(4), room8, "a", Decision{Start: true}},
		{"exact fit", []Model{{ID: "b", Phase: Loaded, Held: ram(4)}}, ram(4), room8, "a", Decision{Start: true}},
		{"too large for the whole budget", nil, ram(9), room8, "a", Decision{TooLarge: true, Blocked: true}},
		{"too large for the ceiling", nil, ram(9), Room{Budget: ram(4), Ceiling: ram(8)}, "a", Decision{TooLarge: true, Blocked: true}},
		{"short of memory now but within the ceiling: wait, don't refuse", nil, ram(6), Room{Budget: ram(4), Ceiling: ram(8)}, "a", Decision{Blocked: true}},
		{"within the ceiling, evicting enough", []Model{{ID: "b", Phase: Loaded, Held: ram(3)}}, ram(6), Room{Budget: ram(7), Ceiling: ram(16)}, "a", Decision{Victims: []string{"b"}}},
		{"evict the least recently used idle model",
			[]Model{{ID: "b", Phase: Loaded, Held: ram(4), LastUsed: at(2)}, {ID: "c", Phase: Loaded, Held: ram(4), LastUsed: at(1)}},
			ram(4), room8, "a", Decision{Victims: []string{"c"}}},
		{"never a model with a lease",
			[]Model{{ID: "b", Phase: Loaded, Held: ram(4), LastUsed: at(2)}, {ID: "c", Phase: Loaded, Held: ram(4), LastUsed: at(1), Leases: 1}},
			ram(4), room8, "a", Decision{Victims: []string{"b"}}},
		{"never a pinned model",
			[]Model{{ID: "b", Phase: Loaded, Held: ram(4), LastUsed: at(2)}, {ID: "c", Phase: Loaded, Held: ram(4), LastUsed: at(1), Pinned: true}},
			ram(4), room8, "a", Decision{Victims: []string{"b"}}},
		{"never a loading model",
			[]Model{{ID: "b", Phase: Loading, Held: ram(8), LastUsed: at(1)}},
			ram(4), room8, "a", Decision{Blocked: true}},
		{"blocked when all are busy",
			[]Model{{ID: "b", Phase: Loaded, Held: ram(4), Leases: 2}, {ID: "c", Phase: Loaded, Held: ram(4), Leases: 1}},
			ram(4), room8, "a", Decision{Blocked: true}},
		{"no pointless eviction when even every idle one is not enough",
			[]Model{{ID: "b", Phase: Loaded, Held: ram(2)}, {ID: "c", Phase: Loaded, Held: ram(6), Leases: 1}},
			ram(4), room8, "a", Decision{Blocked: true}},
		{"wait for models already stopping",
			[]Model{{ID: "b", Phase: Stopping, Held: ram(6)}, {ID: "c", Phase: Loaded, Held: ram(2), LastUsed: at(1)}},
			ram(6), room8, "a", Decision{Wait: true}},
		{"sleeping models count what they really hold",
			[]Model{{ID: "b", Phase: Sleeping, Held: Mem{RAM: 100 << 20}, LastUsed: at(1)}, {ID: "c", Phase: Loaded, Held: ram(4), LastUsed: at(2)}},
			ram(3), room8, "a", Decision{Start: true}},
		{"evicting a sleeping model that holds little can be enough",
			[]Model{{ID: "b", Phase: Sleeping, Held: Mem{RAM: 100 << 20}, LastUsed: at(1)}, {ID: "c", Phase: Loaded, Held: ram(4), LastUsed: at(2)}},
			ram(4), room8, "a", Decision{Victims: []string{"b"}}},
		{"takes as many victims as needed, LRU first",
			[]Model{{ID: "b", Phase: Loaded, Held: ram(2), LastUsed: at(3)}, {ID: "c", Phase: Sleeping, Held: ram(1), LastUsed: at(1)}, {ID: "d", Phase: Loaded, Held: ram(4), LastUsed: at(2)}},
			ram(5), room8, "a", Decision{Victims: []string{"c", "d"}}},
		{"LRU ties broken by ID",
			[]Model{{ID: "z", Phase: Loaded, Held: ram(4), LastUsed: at(1)}, {ID: "y", Phase: Loaded, Held: ram(4), LastUsed: at(1)}},
			ram(4), room8, "a", Decision{Victims: []string{"y"}}},
		{"max loaded evicts for a slot even when memory is free",
			[]Model{{ID: "b", Phase: Loaded, Held: ram(1), LastUsed: at(1)}},
			ram(1), Room{Budget: ram(8), MaxLoaded: 1}, "a", Decision{Victims: []string{"b"}}},
		{"max loaded counts a loading model",
			[]Model{{ID: "b", Phase: Loading, Held: ram(1)}},
			ram(1), Room{Budget: ram(8), MaxLoaded: 1}, "a", Decision{Blocked: true}},
		{"max loaded waits for a stopping one",
			[]Model{{ID: "b", Phase: Stopping, Held: ram(1)}},
			ram(1), Room{Budget: ram(8), MaxLoaded: 1}, "a", Decision{Wait: true}},
		{"waking a sleeping model needs no new slot",
			[]Model{{ID: "a", Phase: Sleeping, Held: ram(0)}, {ID: "b", Phase: Loaded, Held: ram(1)}},
			ram(1), Room{Budget: ram(8), MaxLoaded: 2}, "a", Decision{Start: true}},
		{"waking a sleeping model may evict another",
			[]Model{{ID: "a", Phase: Sleeping, Held: Mem{}}, {ID: "b", Phase: Loaded, Held: ram(6)}},
			ram(4), room8, "a", Decision{Victims: []string{"b"}}},
		{"VRAM is its own dimension",
			[]Model{{ID: "b", Phase: Loaded, Held: On(gib, 6*gib), LastUsed: at(1)}},
			On(gib, 4*gib), Room{Budget: On(32*gib, 8*gib)}, "a", Decision{Victims: []string{"b"}}},
		{"each GPU is its own budget: free memory on two devices is not summed",
			[]Model{{ID: "b", Phase: Loaded, Held: On(gib, 6*gib, 6*gib), Leases: 1}},
			On(gib, 12*gib), Room{Budget: On(64*gib, 16*gib, 16*gib)}, "a", Decision{Blocked: true}},
		{"a model on the other GPU fits beside a busy one",
			[]Model{{ID: "b", Phase: Loaded, Held: On(gib, 14*gib), Leases: 1}},
			On(gib, 0, 14*gib), Room{Budget: On(64*gib, 16*gib, 16*gib)}, "a", Decision{Start: true}},
		{"evicts the model on the device that is short, not the least recent on another",
			[]Model{{ID: "b", Phase: Loaded, Held: On(gib, 0, 10*gib), LastUsed: at(1)}, {ID: "c", Phase: Loaded, Held: On(gib, 10*gib), LastUsed: at(2)}},
			On(gib, 10*gib), Room{Budget: On(64*gib, 16*gib, 16*gib)}, "a", Decision{Victims: []string{"c"}}},
		{"too large for one device even though two together would hold it",
			nil, On(gib, 20*gib), Room{Budget: On(64*gib, 16*gib, 16*gib)}, "a", Decision{TooLarge: true, Blocked: true}},
		{"unified memory: within RAM but over the GPU working set waits for it",
			[]Model{{ID: "b", Phase: Loaded, Held: On(20*gib, 20*gib), Leases: 1}},
			On(8*gib, 8*gib), Room{Budget: On(32*gib, 24*gib), Ceiling: On(32*gib, 24*gib)}, "a", Decision{Blocked: true}},
		{"never a model with queued requests (a sleeper waiting to wake)",
			[]Model{{ID: "s", Phase: Sleeping, Held: ram(1), LastUsed: at(1), Queued: 1}, {ID: "c", Phase: Loaded, Held: ram(6), Leases: 1}},
			ram(2), room8, "a", Decision{Blocked: true}},
		{"a draining model is not a victim but is awaited only via drain",
			[]Model{{ID: "b", Phase: Loaded, Held: ram(8), Leases: 1, Draining: true}},
			ram(4), room8, "a", Decision{Blocked: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Fit(tc.views, tc.need, tc.room, tc.self)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Fit = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDrain(t *testing.T) {
	room8 := Room{Budget: ram(8)}
	tests := []struct {
		name  string
		views []Model
		need  Mem
		room  Room
		want  []string
		ok    bool
	}{
		{"drain the least recently used busy model",
			[]Model{{ID: "b", Phase: Loaded, Held: ram(4), Leases: 1, LastUsed: at(2)}, {ID: "c", Phase: Loaded, Held: ram(4), Leases: 1, LastUsed: at(1)}},
			ram(4), room8, []string{"c"}, true},
		{"idle ones count as gone already",
			[]Model{{ID: "b", Phase: Loaded, Held: ram(2)}, {ID: "c", Phase: Loaded, Held: ram(6), Leases: 3, LastUsed: at(1)}},
			ram(6), room8, []string{"c"}, true},
		{"pinned busy models are never drained",
			[]Model{{ID: "b", Phase: Loaded, Held: ram(8), Leases: 1, Pinned: true}},
			ram(4), room8, nil, false},
		{"already draining counts as gone",
			[]Model{{ID: "b", Phase: Loaded, Held: ram(8), Leases: 1, Draining: true}},
			ram(4), room8, nil, true},
		{"an idle model with queued requests does not count as gone",
			[]Model{{ID: "s", Phase: Sleeping, Held: ram(6), Queued: 1}, {ID: "c", Phase: Loaded, Held: ram(2), Leases: 1, LastUsed: at(1)}},
			ram(4), room8, nil, false},
		{"slot cap",
			[]Model{{ID: "b", Phase: Loaded, Held: ram(1), Leases: 1, LastUsed: at(5)}},
			ram(1), Room{Budget: ram(8), MaxLoaded: 1}, []string{"b"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Drain(tc.views, tc.need, tc.room, "a")
			if !reflect.DeepEqual(got, tc.want) || ok != tc.ok {
				t.Fatalf("Drain = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestPressure(t *testing.T) {
	views := []Model{
		{ID: "busy", Phase: Loaded, Held: ram(4), Leases: 1, LastUsed: at(0)},
		{ID: "pinned", Phase: Loaded, Held: ram(4), Pinned: true, LastUsed: at(0)},
		{ID: "old", Phase: Loaded, Held: ram(1), LastUsed: at(1)},
		{ID: "sleepy", Phase: Sleeping, Held: Mem{RAM: 50 << 20}, LastUsed: at(2)},
		{ID: "new", Phase: Loaded, Held: ram(3), LastUsed: at(3)},
		{ID: "loading", Phase: Loading, Held: ram(3), LastUsed: at(0)},
	}
	tests := []struct {
		deficit int64
		want    []string
	}{
		{0, nil},
		{gib / 2, []string{"old"}},
		{gib + 1, []string{"old", "sleepy"}},
		{gib + 100<<20, []string{"old", "sleepy", "new"}},
		{100 * gib, []string{"old", "sleepy", "new"}},
	}
	for _, tc := range tests {
		got, _, freed := Pressure(views, 0, tc.deficit)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Pressure(%d) = %v, want %v", tc.deficit, got, tc.want)
		}
		if tc.deficit > 0 && tc.deficit <= 4*gib && freed < tc.deficit {
			t.Errorf("Pressure(%d) freed only %d", tc.deficit, freed)
		}
	}
}

// A reservation is counted once: a sleeping model about to wake holds one slot and its whole need,
// and is no victim; a model about to load is a new view.
func TestReserve(t *testing.T) {
	sleeping := []Model{{ID: "s", Phase: Sleeping, Held: ram(1), LastUsed: at(1)}, {ID: "y", Phase: Loaded, Held: ram(4), Leases: 1}}
	got := Reserve(sleeping, "s", ram(3))
	want := []Model{{ID: "s", Phase: Sleeping, Held: ram(4), LastUsed: at(1), Queued: 1}, {ID: "y", Phase: Loaded, Held: ram(4), Leases: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Reserve = %+v, want %+v", got, want)
	}
	if sleeping[0].Held != ram(1) {
		t.Fatal("Reserve changed its input")
	}
	if got := Reserve(nil, "b", ram(2)); !reflect.DeepEqual(got, []Model{{ID: "b", Phase: Loading, Held: ram(2), Queued: 1}}) {
		t.Fatalf("Reserve of a new load = %+v", got)
	}
	// Room for three: s (waking), y and one more. Counted twice, s would fill the last slot and be
	// the victim of the next load.
	room := Room{Budget: ram(10), MaxLoaded: 3}
	if d := Fit(Reserve(sleeping, "s", ram(3)), ram(1), room, "b"); !reflect.DeepEqual(d, Decision{Start: true}) {
		t.Fatalf("Fit after the wake's reservation = %+v, want Start", d)
	}
	if d := Fit(Reserve(sleeping, "s", ram(3)), ram(3), room, "b"); !reflect.DeepEqual(d, Decision{Blocked: true}) {
		t.Fatalf("Fit short of memory = %+v, want Blocked (s is no victim)", d)
	}
}

func TestUnloadDue(t *testing.T) {
	base := Model{ID: "a", Phase: Loaded, LastUsed: at(10)}
	tests := []struct {
		name  string
		edit  func(*Model)
		after time.Duration
		due   time.Time
		ok    bool
	}{
		{"idle loaded", func(*Model) {}, 5 * time.Second, at(15), true},
		{"idle sleeping", func(v *Model) { v.Phase = Sleeping }, 5 * time.Second, at(15), true},
		{"timer off", func(*Model) {}, 0, time.Time{}, false},
		{"leased", func(v *Model) { v.Leases = 1 }, 5 * time.Second, time.Time{}, false},
		{"queued request", func(v *Model) { v.Queued = 1 }, 5 * time.Second, time.Time{}, false},
		{"pinned", func(v *Model) { v.Pinned = true }, 5 * time.Second, time.Time{}, false},
		{"draining", func(v *Model) { v.Draining = true }, 5 * time.Second, time.Time{}, false},
		{"loading", func(v *Model) { v.Phase = Loading }, 5 * time.Second, time.Time{}, false},
		{"stopping", func(v *Model) { v.Phase = Stopping }, 5 * time.Second, time.Time{}, false},
	}
	for _, tc := range tests {
		v := base
		v.UnloadAfter = tc.after
		tc.edit(&v)
		due, ok := UnloadDue(v)
		if !due.Equal(tc.due) || ok != tc.ok {
			t.Errorf("%s: UnloadDue = %v, %v; want %v, %v", tc.name, due, ok, tc.due, tc.ok)
		}
	}
}

// The deficit is what the system is short less what models already stopping give back.
func TestPressureCountsStopping(t *testing.T) {
	views := []Model{
		{ID: "going", Phase: Stopping, Held: ram(2)},
		{ID: "old", Phase: Loaded, Held: ram(1), LastUsed: at(1)},
		{ID: "new", Phase: Loaded, Held: ram(1), LastUsed: at(2)},
	}
	for _, tc := range []struct {
		short, deficit int64
		want           []string
	}{
		{2 * gib, 0, nil},
		{2*gib + 1, 1, []string{"old"}},
		{3*gib + 1, gib + 1, []string{"old", "new"}},
	} {
		got, deficit, _ := Pressure(views, 0, tc.short)
		if !reflect.DeepEqual(got, tc.want) || deficit != tc.deficit {
			t.Errorf("Pressure(%d) = %v, deficit %d; want %v, %d", tc.short, got, deficit, tc.want, tc.deficit)
		}
	}
}

// Pressure is off without a reserve, and while the available RAM is at or above it.
func TestPressureDeficit(t *testing.T) {
	views := []Model{{ID: "old", Phase: Loaded, Held: ram(1), LastUsed: at(1)}}
	for _, tc := range []struct {
		name               string
		available, reserve int64
		deficit            int64
		want               []string
	}{
		{"no reserve: off, however little is available", 0, 0, 0, nil},
		{"available above the reserve", 3 * gib, 2 * gib, 0, nil},
		{"available at the reserve", 2 * gib, 2 * gib, 0, nil},
		{"short of the reserve: the deficit is what is short", gib, 2 * gib, gib, []string{"old"}},
	} {
		got, deficit, _ := Pressure(views, tc.available, tc.reserve)
		if !reflect.DeepEqual(got, tc.want) || deficit != tc.deficit {
			t.Errorf("%s: Pressure = %v, deficit %d; want %v, %d", tc.name, got, deficit, tc.want, tc.deficit)
		}
	}
}

func TestPressureSparesQueued(t *testing.T) {
	views := []Model{
		{ID: "waking", Phase: Sleeping, Held: ram(1), LastUsed: at(0), Queued: 2},
		{ID: "idle", Phase: Loaded, Held: ram(2), LastUsed: at(1)},
	}
	if got, _, _ := Pressure(views, 0, 10*gib); !reflect.DeepEqual(got, []string{"idle"}) {
		t.Fatalf("Pressure = %v, want only idle", got)
	}
}

func TestExcess(t *testing.T) {
	views := []Model{
		{ID: "old", Phase: Loaded, Held: ram(2), LastUsed: at(1)},
		{ID: "busy", Phase: Loaded, Held: ram(2), Leases: 1, LastUsed: at(0)},
		{ID: "pinned", Phase: Loaded, Held: ram(2), Pinned: true, LastUsed: at(0)},
		{ID: "waking", Phase: Sleeping, Held: ram(2), Queued: 1, LastUsed: at(0)},
		{ID: "loading", Phase: Loading, Held: ram(2), LastUsed: at(0)},
		{ID: "new", Phase: Loaded, Held: ram(2), LastUsed: at(2)},
		{ID: "going", Phase: Stopping, Held: ram(2), LastUsed: at(0)},
	}
	tests := []struct {
		name string
		room Room
		want []string
	}{
		{"within the budget and the cap", Room{Budget: ram(12), MaxLoaded: 6}, nil},
		{"memory limit lowered", Room{Budget: ram(10)}, []string{"old"}},
		{"memory limit far below: every idle model, no other", Room{Budget: ram(1)}, []string{"old", "new"}},
		{"max_loaded lowered", Room{Budget: ram(100), MaxLoaded: 5}, []string{"old"}},
		{"max_loaded below the busy ones", Room{Budget: ram(100), MaxLoaded: 1}, []string{"old", "new"}},
	}
	for _, tc := range tests {
		if got := Excess(views, tc.room); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Excess = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name     string
		ram, gpu int64
		layers   int
		shares   []int64
		want     Mem
	}{
		{"no device: all RAM", gib, 4 * gib, 33, nil, On(5 * gib)},
		{"one device takes it all", gib, 4 * gib, 33, []int64{24 * gib}, On(gib, 4*gib)},
		{"two equal devices, even layers", gib, 4 * gib, 32, []int64{16 * gib, 16 * gib}, On(gib, 2*gib, 2*gib)},
		{"two unequal devices, by share", 0, 30 * gib, 30, []int64{8 * gib, 16 * gib}, On(0, 10*gib, 20*gib)},
		{"whole layers: an odd layer goes where the cumulative share lands", 0, 3 * gib, 3, []int64{16 * gib, 16 * gib}, On(0, 2*gib, 1*gib)},
		{"a device with no share gets nothing", 0, 4 * gib, 0, []int64{0, 16 * gib}, On(0, 0, 4*gib)},
		{"CPU only", gib, 0, 0, []int64{16 * gib}, On(gib)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Split(tc.ram, tc.gpu, tc.layers, tc.shares)
			if got != tc.want {
				t.Fatalf("Split = %v, want %v", got, tc.want)
			}
			if got.Total() != tc.ram+tc.gpu {
				t.Fatalf("Split lost bytes: %d, want %d", got.Total(), tc.ram+tc.gpu)
			}
		})
	}
}

func TestFree(t *testing.T) {
	tests := []struct {
		name   string
		views  []Model
		budget Mem
		want   Mem
	}{
		{"nothing held", nil, On(8*gib, 4*gib), On(8*gib, 4*gib)},
		{"held and booked", []Model{{ID: "a", Phase: Loaded, Held: On(2*gib, gib)}, {ID: "b", Phase: Loading, Held: ram(3)}}, On(8*gib, 4*gib), On(3*gib, 3*gib)},
		{"over the budget: none, never negative", []Model{{ID: "a", Phase: Loaded, Held: On(9*gib, 5*gib)}}, On(8*gib, 4*gib), Mem{}},
	}
	for _, tt := range tests {
		if got := Free(tt.views, tt.budget); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestHolders(t *testing.T) {
	views := []Model{
		{ID: "idle", Phase: Loaded, Held: ram(1)},
		{ID: "busy", Phase: Loaded, Leases: 2, Held: ram(1)},
		{ID: "pinned", Phase: Sleeping, Pinned: true, Held: ram(1)},
		{ID: "loading", Phase: Loading, Held: ram(1)},
		{ID: "draining", Phase: Loaded, Leases: 1, Draining: true, Held: ram(1)},
		{ID: "stopping", Phase: Stopping, Held: ram(1)},
		{ID: "queued", Phase: Sleeping, Queued: 1, Held: ram(1)},
		{ID: "self", Phase: Sleeping, Leases: 1, Held: ram(1)},
	}
	got := Holders(views, "self")
	want := []string{"busy", "draining", "loading", "pinned", "queued"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("holders %v, want %v (not the idle, the stopping, nor self)", got, want)
	}
}

// Rows of Margins: what a child must leave free on each device (--fit-target) to hold no more than
// its share there.
func TestMarginsRows(t *testing.T) {
	const mb = int64(1) << 20
	self := func(share ...int64) Model { return Model{ID: "a", Phase: Loading, Held: On(gib, share...)} }
	other := func(ph Phase, held ...int64) Model { return Model{ID: "b", Phase: ph, Held: On(gib, held...)} }
	for _, c := range []struct {
		name    string
		models  []Model
		free    []int64
		unified bool
		want    []int64
	}{
		{"no device", []Model{self()}, nil, false, []int64{}},
		{"one device: free less its share", []Model{self(12000 * mb)}, []int64{20000 * mb}, false, []int64{8000 * mb}},
		{"per device", []Model{self(8000*mb, 2000*mb)}, []int64{16384 * mb, 16384 * mb}, false, []int64{8384 * mb, 14384 * mb}},
		{"a share of all that is free: the floor", []Model{self(8000 * mb)}, []int64{8000 * mb}, false, []int64{FitFloor}},
		{"less free than the share: the floor", []Model{self(8000 * mb)}, []int64{6000 * mb}, false, []int64{FitFloor}},
		{"nothing planned on a device", []Model{self(4096*mb, 0)}, []int64{4096 * mb, 4096 * mb}, false, []int64{FitFloor, 4096 * mb}},
		{"another model loading is promised its share", []Model{self(2000 * mb), other(Loading, 4000*mb)}, []int64{16000 * mb}, false, []int64{10000 * mb}},
		{"another model stopping still holds its share", []Model{self(2000 * mb), other(Stopping, 4000*mb)}, []int64{16000 * mb}, false, []int64{10000 * mb}},
		{"a model without a process holds nothing", []Model{self(2000 * mb), other(Unloaded, 4000*mb)}, []int64{16000 * mb}, false, []int64{14000 * mb}},
		{"unified: the working set less its share, nothing taken off", []Model{self(8000 * mb), other(Loaded, 4000*mb)}, []int64{24000 * mb}, true, []int64{16000 * mb}},
	} {
		if got := Margins(c.models, "a", c.free, c.unified); !slices.Equal(got, c.want) {
			t.Errorf("%s: Margins = %v, want %v", c.name, got, c.want)
		}
	}
}
