package engine

import (
	"maps"
	"slices"
	"testing"

	"github.com/llamatray/llamatray/router/mem"
)

// Synchronous tests of memory per GPU device: budgets per device, footprints learned per device from
// the child's own buffer report, the estimate split over devices, Apple silicon's working-set limit,
// and a configured per-device limit.

const gib = int64(1) << 30

// gpus sets the GPUs the probe reports and takes a sample.
func (s *syncEngine) gpus(unified bool, gs ...mem.GPU) {
	s.probe.set(func(p *fakeProbe) { p.sys.GPUs, p.sys.Unified = gs, unified })
	s.e.sample(s.t.Context())
}

// On two 16 GiB GPUs, a model whose child put 14 GiB on CUDA0 leaves 2 GiB there: a second model that
// needs 4 GiB on each device does not start beside it, though 16 GiB are free over both together.
// The first model's footprint is learned per device, from its buffer lines.
func TestSchedBudgetPerDevice(t *testing.T) {
	s := newSync(t, func(o *Options) { o.MemoryLimit = 0 },
		syncModel{id: "a", ramMiB: 1 << 10, vramMiB: 16 << 10, layers: 32},
		syncModel{id: "b", ramMiB: 1 << 10, vramMiB: 8 << 10, layers: 32})
	two := func(free0, free1 int64) {
		s.gpus(false, mem.GPU{Name: "RTX A", Device: "CUDA0", Total: 16 * gib, Free: free0}, mem.GPU{Name: "RTX B", Device: "CUDA1", Total: 16 * gib, Free: free1})
	}
	two(16*gib, 16*gib)
	wa := s.request("a")
	pa := s.fx.proc(t, "a")
	pa.readyWith(map[string]int64{"CPU": 300 << 20, "CUDA0": 14 * gib, "CUDA1": 2 * gib})
	la := s.lease(wa)
	s.probe.set(func(p *fakeProbe) { p.rss[pa.pid] = gib })
	two(2*gib, 14*gib)
	if st := s.state("a"); st.LearnedBytes != 17*gib {
		t.Fatalf("learned %d MiB, want 17 GiB", st.LearnedBytes>>20)
	}
	if got := s.e.fp.get(footprintKey(s.e.models["a"].entry, s.e.models["a"].args)); !maps.Equal(got.Devices, map[string]int64{"CUDA0": 14 * gib, "CUDA1": 2 * gib}) {
		t.Fatalf("footprint per device %v, want the child's buffer lines (CUDA0 14 GiB, CUDA1 2 GiB)", got.Devices)
	}
	b := s.e.Budget()
	if len(b.Devices) != 2 || b.Devices[0].Used != 14*gib || b.Devices[1].Used != 2*gib || b.Devices[0].Limit != 16*gib {
		t.Fatalf("device budgets %+v", b.Devices)
	}

	wb := s.request("b")
	if got := s.fx.spawned(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("spawned %v: b started beside a with 2 GiB left on CUDA0", got)
	}
	s.pending(wb)
	la.Release() // a is idle now: b evicts it
	if !pa.stopped() {
		t.Fatal("idle a was not evicted for b")
	}
	pa.exitStopped()
	two(16*gib, 16*gib)
	pb := s.fx.proc(t, "b")
	pb.readyWith(map[string]int64{"CUDA0": 4 * gib, "CUDA1": 4 * gib})
	s.lease(wb).Release()
}

// The estimate's GPU part is split over the devices by the layers offloaded, in proportion to the
// devices' memory; a model that fits the two together but not one of them can start when the split
// fits.
func TestSchedEstimateSplitByLayers(t *testing.T) {
	s := newSync(t, func(o *Options) { o.MemoryLimit = 0; o.FitTarget = true },
		syncModel{id: "a", ramMiB: 1 << 10, vramMiB: 24 << 10, layers: 48})
	s.gpus(false, mem.GPU{Name: "big", Device: "CUDA0", Total: 16 * gib, Free: 16 * gib}, mem.GPU{Name: "small", Device: "CUDA1", Total: 8 * gib, Free: 8 * gib})
	s.e.mu.Lock()
	need := s.e.need(s.e.models["a"])
	s.e.mu.Unlock()
	if need.GPU[0] != 16*gib || need.GPU[1] != 8*gib || need.RAM != gib {
		t.Fatalf("need %v, want 16 GiB on CUDA0 and 8 GiB on CUDA1", need)
	}
	s.load("a")
}

// On Apple silicon the GPU may use only the Metal working-set limit: on a 36 GiB Mac (24 GiB working
// set) two models of 14 GiB on the GPU never run side by side, though RAM would hold both.
func TestSchedAppleWorkingSet(t *testing.T) {
	s := newSync(t, func(o *Options) { o.MemoryLimit = 0 },
		syncModel{id: "a", ramMiB: 512, vramMiB: 14 << 10, layers: 33},
		syncModel{id: "b", ramMiB: 512, vramMiB: 14 << 10, layers: 33})
	s.probe.set(func(p *fakeProbe) { p.sys.Total, p.sys.Available = 36*gib, 34*gib })
	ws := mem.MetalWorkingSet(36*gib, 0)
	s.gpus(true, mem.GPU{Name: "Apple M3 Pro", Device: "MTL0", Total: ws, Free: ws})
	pa := s.load("a")
	s.probe.set(func(p *fakeProbe) { p.rss[pa.pid] = 15 * gib; p.sys.Available = 19 * gib })
	s.e.sample(t.Context())
	la := s.lease(s.request("a"))
	wb := s.request("b")
	if got := s.fx.spawned(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("spawned %v: b started beside a over the Metal working set (%d MiB)", got, ws>>20)
	}
	s.pending(wb)
	la.Release()
	if !pa.stopped() {
		t.Fatal("idle a was not evicted for b")
	}
	pa.exitStopped()
	s.fx.proc(t, "b").ready()
	s.lease(wb).Release()
}

// A configured per-device limit is the device's budget, whatever the device reports free (lavapipe
// reports host memory as its own): two models of 1 GiB each on a device limited to 1.5 GiB never
// share it; a model over the limit is refused at once, naming the device.
func TestSchedDeviceLimit(t *testing.T) {
	s := newSync(t, func(o *Options) {
		o.MemoryLimit = 0
		o.DeviceLimits = map[string]int64{"Vulkan0": 1536 << 20}
	},
		syncModel{id: "a", ramMiB: 100, vramMiB: 1 << 10, layers: 9},
		syncModel{id: "b", ramMiB: 100, vramMiB: 1 << 10, layers: 9},
		syncModel{id: "huge", ramMiB: 100, vramMiB: 2 << 10, layers: 9})
	s.gpus(false, mem.GPU{Name: "llvmpipe", Device: "Vulkan0", Total: 24 * gib, Free: 23 * gib})
	s.load("a")
	wb := s.request("b")
	if !s.fx.proc(t, "a").stopped() {
		t.Fatal("idle a was not evicted for b on a device limited to 1.5 GiB")
	}
	s.fx.proc(t, "a").exitStopped()
	s.fx.proc(t, "b").ready()
	s.lease(wb).Release()
	r := s.answer(s.request("huge"))
	if _, ok := r.err.(*TooLargeError); !ok || r.err.(*TooLargeError).Device != "Vulkan0" {
		t.Fatalf("huge: %v, want TooLargeError on Vulkan0", r.err)
	}
}
