package engine

import (
	"slices"
	"testing"

	"github.com/llamatray/llamatray/router/mem"
)

func TestUserOffload(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--temp", "0.7", "-fa", "on"}, false},
		{[]string{"-ngl", "20"}, true},
		{[]string{"--n-gpu-layers=20"}, true},
		{[]string{"--gpu-layers", "all"}, true},
		{[]string{"--fit", "off"}, true},
		{[]string{"-fit", "on"}, true},
		{[]string{"--fit-target", "512"}, true},
		{[]string{"-fitt=256,256"}, true},
		{[]string{"-ts", "3,1"}, true},
		{[]string{"--tensor-split", "1,1"}, true},
		{[]string{"--fit-ctx", "8192"}, false}, // a floor for the context, not the offload
	} {
		if got := userOffload(c.args); got != c.want {
			t.Errorf("userOffload(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// A child on GPUs is told the margin to leave free on each device: what the device has free for it
// (less what a model loading beside it is promised) minus its share; the user's -ngl wins, and a
// llama-server without --fit-target gets nothing added. The learned footprint's key is the command
// line without it.
func TestSchedFitTargetPassed(t *testing.T) {
	s := newSync(t, func(o *Options) { o.MemoryLimit = 0; o.FitTarget = true },
		syncModel{id: "a", ramMiB: 1 << 10, vramMiB: 8 << 10, layers: 32},
		syncModel{id: "b", ramMiB: 1 << 10, vramMiB: 4 << 10, layers: 32},
		syncModel{id: "u", ramMiB: 1 << 10, vramMiB: 2 << 10, layers: 32, settings: Settings{Args: []string{"-ngl", "10"}}},
		syncModel{id: "d", ramMiB: 1 << 10, vramMiB: 2 << 10, layers: 32})
	s.gpus(false, mem.GPU{Name: "RTX A", Device: "CUDA0", Total: 16 * gib, Free: 16 * gib}, mem.GPU{Name: "RTX B", Device: "CUDA1", Total: 16 * gib, Free: 15 * gib})
	s.request("a")
	pa := s.fx.proc(t, "a")
	if got, want := fitOf(pa.spec.Args), "12288,11264"; got != want { // a: 4 GiB on each; 16 and 15 GiB free
		t.Fatalf("a's --fit-target %q, want %q (args %q)", got, want, pa.spec.Args)
	}
	s.request("b") // while a loads, its 4 GiB a device are promised to it
	pb := s.fx.proc(t, "b")
	if got, want := fitOf(pb.spec.Args), "10240,9216"; got != want { // b: 2 GiB on each
		t.Fatalf("b's --fit-target %q, want %q (args %q)", got, want, pb.spec.Args)
	}
	if st := s.state("b"); fitOf(st.Args) != "10240,9216" {
		t.Fatalf("b's status args %q lack its --fit-target", st.Args)
	}
	if m := s.e.models["b"]; slices.Contains(m.args, "--fit-target") {
		t.Fatalf("the footprint key's args %q hold the --fit-target", m.args)
	}
	s.request("u")
	if pu := s.fx.proc(t, "u"); slices.Contains(pu.spec.Args, "--fit-target") {
		t.Fatalf("u's -ngl was given, yet %q", pu.spec.Args)
	}
	s.setLimits(func(l *Limits) { l.FitTarget = false })
	s.request("d")
	if p := s.fx.proc(t, "d"); slices.Contains(p.spec.Args, "--fit-target") {
		t.Fatalf("a llama-server without --fit-target was given %q", p.spec.Args)
	}
}

// fitOf is the value of --fit-target in args, "" when none.
func fitOf(args []string) string {
	if i := slices.Index(args, "--fit-target"); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// On unified memory a child sees Metal's whole working set as its own: its margin is the working
// set less its share.
func TestSchedFitTargetUnified(t *testing.T) {
	s := newSync(t, func(o *Options) { o.MemoryLimit = 0; o.FitTarget = true }, syncModel{id: "a", ramMiB: 1 << 10, vramMiB: 8 << 10, layers: 32})
	s.gpus(true, mem.GPU{Name: "Apple M3 Pro", Device: "MTL0", Total: 24 * gib, Free: 10 * gib})
	s.request("a")
	if got := fitOf(s.fx.proc(t, "a").spec.Args); got != "16384" {
		t.Fatalf("--fit-target %q, want 16384", got)
	}
}

// A child that cannot correct its estimate itself (the user's -ngl, or a llama-server without
// --fit-target) is planned with each device's share padded, until its footprint is learned.
func TestSchedUnfittedEstimatePadded(t *testing.T) {
	s := newSync(t, func(o *Options) { o.MemoryLimit = 0; o.FitTarget = true },
		syncModel{id: "f", ramMiB: 1 << 10, vramMiB: 8 << 10, layers: 32},
		syncModel{id: "u", ramMiB: 1 << 10, vramMiB: 8 << 10, layers: 32, settings: Settings{Args: []string{"-ngl", "32"}}},
		syncModel{id: "s", ramMiB: 1 << 10, vramMiB: 2 << 10, layers: 32, settings: Settings{Args: []string{"-ngl", "32"}}})
	s.gpus(false, mem.GPU{Name: "RTX", Device: "CUDA0", Total: 16 * gib, Free: 16 * gib})
	need := func(id string) int64 {
		s.e.mu.Lock()
		defer s.e.mu.Unlock()
		return s.e.need(s.e.models[id]).GPU[0]
	}
	if got := need("f"); got != 8*gib {
		t.Fatalf("f, fitted by its child, needs %d MiB on CUDA0, want 8192", got>>20)
	}
	if got := need("u"); got != 9*gib {
		t.Fatalf("u, with -ngl, needs %d MiB on CUDA0, want 8192 + 1/8", got>>20)
	}
	if got := need("s"); got != 2*gib+256<<20 {
		t.Fatalf("s, with -ngl, needs %d MiB on CUDA0, want 2048 + 1/8", got>>20)
	}
	s.request("u")
	pu := s.fx.proc(t, "u")
	pu.readyWith(map[string]int64{"CUDA0": 8*gib + 300<<20})
	s.probe.set(func(p *fakeProbe) { p.rss[pu.pid] = gib })
	s.gpus(false, mem.GPU{Name: "RTX", Device: "CUDA0", Total: 16 * gib, Free: 7 * gib}) // a sample: learned
	if got := need("u"); got != 8*gib+300<<20 {
		t.Fatalf("u, learned, needs %d MiB on CUDA0, want what it held (8492)", got>>20)
	}
	s.setLimits(func(l *Limits) { l.FitTarget = false })
	if got := need("f"); got != 9*gib {
		t.Fatalf("f, under a llama-server without --fit-target, needs %d MiB on CUDA0, want 8192 + 1/8", got>>20)
	}
}

// A child that measures the GPUs' free memory as it starts (llama.cpp's --fit) would count what a
// child still loading there was promised as free for itself: on a nearly full device it starts once
// that load is done, and the loads queued after it wait their turn. A child with the user's -ngl
// measures nothing and starts beside it; so does a load on a device with room to spare, and any
// load on unified memory.
func TestSchedFitLoadWaitsForNeighbour(t *testing.T) {
	models := []syncModel{
		{id: "a", ramMiB: 1 << 10, vramMiB: 4 << 10, layers: 32},
		{id: "b", ramMiB: 1 << 10, vramMiB: 4 << 10, layers: 32},
		{id: "c", ramMiB: 1 << 10, vramMiB: 512, layers: 32},
		{id: "u", ramMiB: 1 << 10, vramMiB: 1 << 10, layers: 32, settings: Settings{Args: []string{"-ngl", "32"}}},
	}
	fitSync := func() *syncEngine {
		return newSync(t, func(o *Options) { o.MemoryLimit = 0; o.FitTarget = true }, models...)
	}
	s := fitSync()
	// 10 GiB: a 4, u 1 (+1/8), b 4 leave 0.875 GiB, less than 1/8 of the 9.125 GiB loading there.
	s.gpus(false, mem.GPU{Name: "RTX", Device: "CUDA0", Total: 10 * gib, Free: 10 * gib})
	spawned := func(s *syncEngine, want ...string) {
		t.Helper()
		if got := s.fx.spawned(); !slices.Equal(got, want) {
			t.Fatalf("spawned %v, want %v", got, want)
		}
	}
	s.request("a")
	pa := s.fx.proc(t, "a")
	s.request("u")
	spawned(s, "a", "u") // u's -ngl measures nothing: it starts beside a's load
	s.request("b")
	s.request("c")
	if w := s.waitOf("b"); w.Kind != WaitBehind || w.Behind != "a" {
		t.Fatalf("b waits %+v, want behind a's load", w)
	}
	if w := s.waitOf("c"); w.Kind != WaitBehind || w.Behind != "b" {
		t.Fatalf("c waits %+v, want behind b (first come, first served)", w)
	}
	pa.ready()
	spawned(s, "a", "u", "b") // a reported what it holds; 0.875 GiB is 1/8 of b's and u's 5.125

	// A sleeping child given a request reloads its weights: a --fit load waits for that wake too.
	w := fitSync()
	const total = 8*gib + 512<<20 // a 4 and b 4 leave 0.5 GiB, less than 1/8 of their 8
	w.gpus(false, mem.GPU{Name: "RTX", Device: "CUDA0", Total: total, Free: total})
	wa := w.request("a")
	pw := w.fx.proc(t, "a")
	pw.readyWith(map[string]int64{"CUDA0": 4 * gib})
	w.lease(wa).Release()
	pw.sleep()
	w.gpus(false, mem.GPU{Name: "RTX", Device: "CUDA0", Total: total, Free: total}) // asleep: its GPU memory is free
	la := w.lease(w.request("a"))                                                   // wakes a
	w.request("b")
	if st := w.waitOf("b"); st.Kind != WaitBehind || st.Behind != "a" {
		t.Fatalf("b, while a wakes on a nearly full GPU, waits %+v, want behind a", st)
	}
	spawned(w, "a")
	pw.woke()
	spawned(w, "a", "b")
	la.Release()

	roomy := fitSync()
	roomy.gpus(false, mem.GPU{Name: "RTX", Device: "CUDA0", Total: 24 * gib, Free: 24 * gib})
	roomy.request("a")
	roomy.request("b")
	spawned(roomy, "a", "b") // 16 GiB left: room for both estimates to run low

	m := fitSync()
	m.gpus(true, mem.GPU{Name: "Apple M3 Pro", Device: "MTL0", Total: 9 * gib, Free: 9 * gib})
	m.request("a")
	m.request("b")
	spawned(m, "a", "b") // unified: each child's margin is taken from the whole working set
}
