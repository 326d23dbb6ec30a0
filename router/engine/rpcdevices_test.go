package engine

import (
	"errors"
	"maps"
	"testing"

	"github.com/llamatray/llamatray/router/mem"
)

// Workers' RPC devices are devices of the budget, after this machine's GPU: a model's estimate is
// split over this machine's GPU and its own workers' devices, its child's buffer report (RPC0,
// RPC1 in its --rpc order) is learned per worker device, and a model too large for a worker's
// device is refused naming it.
func TestWorkersRPCDevicesInTheBudget(t *testing.T) {
	fw := &fakeWorkers{ends: map[string]string{"a": "127.0.0.1:40001", "b": "127.0.0.1:40002"}, errs: map[string]error{},
		devs: []WorkerDevice{{Worker: "b", Name: "RPC0", Total: 16 * gib, Free: 16 * gib}, {Worker: "a", Name: "RPC0", Total: 16 * gib, Free: 16 * gib}}}
	s := newSync(t, func(o *Options) { o.MemoryLimit = 0; o.Workers = fw },
		syncModel{id: "ab", ramMiB: 1 << 10, vramMiB: 24 << 10, layers: 48, settings: Settings{Workers: []string{"b", "a"}}},
		syncModel{id: "huge", ramMiB: 1 << 10, vramMiB: 40 << 10, layers: 40, settings: Settings{Workers: []string{"a"}, Args: []string{"-ngl", "99"}}},
		syncModel{id: "local", ramMiB: 1 << 10, vramMiB: 8 << 10, layers: 32})
	s.gpus(false, mem.GPU{Name: "RTX", Device: "CUDA0", Total: 16 * gib, Free: 16 * gib})

	b := s.e.Budget()
	if len(b.Devices) != 3 || b.Devices[0].Name != "CUDA0" || b.Devices[1].Name != "a/RPC0" || b.Devices[2].Name != "b/RPC0" || b.Devices[2].Limit != 16*gib {
		t.Fatalf("devices %+v, want CUDA0, a/RPC0, b/RPC0 with their memory", b.Devices)
	}
	s.e.mu.Lock()
	need, local := s.e.need(s.e.models["ab"]), s.e.need(s.e.models["local"])
	s.e.mu.Unlock()
	if need.GPU[0] != 8*gib+gib || need.GPU[1] != 8*gib+gib || need.GPU[2] != 8*gib+gib { // a third each, padded by 1/8
		t.Fatalf("ab's need %v, want its 24 GiB split over CUDA0 and both workers", need)
	}
	if local.GPU[1] != 0 || local.GPU[2] != 0 || local.GPU[0] == 0 {
		t.Fatalf("local's need %v, want nothing on the workers' devices", local)
	}

	// The child names its RPC devices by each server's number and end: b's link first, then a's.
	w := s.request("ab")
	p := s.fx.proc(t, "ab")
	p.readyWith(map[string]int64{"CPU": 300 << 20, "CUDA0": 7 * gib, "RPC0[127.0.0.1:40002]": 6 * gib, "RPC0[127.0.0.1:40001]": 5 * gib})
	l := s.lease(w)
	if st := s.state("ab"); !maps.Equal(st.HeldGPU, map[string]int64{"CUDA0": 7 * gib, "b/RPC0": 6 * gib, "a/RPC0": 5 * gib}) {
		t.Fatalf("ab holds %v, want CUDA0 7 GiB, b/RPC0 6 GiB, a/RPC0 5 GiB", st.HeldGPU)
	}
	s.probe.set(func(p2 *fakeProbe) { p2.rss[p.pid] = gib })
	s.e.sample(t.Context())
	if got := s.e.fp.get(footprintKey(s.e.models["ab"].entry, s.e.models["ab"].args)); !maps.Equal(got.Devices, map[string]int64{"CUDA0": 7 * gib, "b/RPC0": 6 * gib, "a/RPC0": 5 * gib}) {
		t.Fatalf("footprint per device %v, want the child's buffers on each worker's device", got.Devices)
	}
	l.Release()

	r := s.answer(s.request("huge"))
	var tl *TooLargeError
	if !errors.As(r.err, &tl) || tl.Device != "a/RPC0" {
		t.Fatalf("huge: %v, want too large for a/RPC0", r.err)
	}
}

// A buffer report that numbers the RPC devices over the child's ends (RPC0, RPC1, without the end)
// is read in --rpc order.
func TestWorkersRPCBuffersNumbered(t *testing.T) {
	fw := &fakeWorkers{ends: map[string]string{"a": "127.0.0.1:40001", "b": "127.0.0.1:40002"}, errs: map[string]error{},
		devs: []WorkerDevice{{Worker: "a", Name: "RPC0", Total: gib, Free: gib}, {Worker: "b", Name: "RPC0", Total: gib, Free: gib}}}
	s := newSync(t, func(o *Options) { o.Workers = fw })
	s.gpus(false)
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	m := &model{workers: []string{"b", "a"}, rpc: []string{"--rpc", "127.0.0.1:40002,127.0.0.1:40001"}}
	got := s.e.rpcBuffers(m, map[string]int64{"CPU": 1, "RPC0": 2, "RPC1": 3, "RPC0[127.0.0.1:40001]": 4})
	if want := map[string]int64{"CPU": 1, "b/RPC0": 2, "a/RPC0": 3 + 4}; !maps.Equal(got, want) {
		t.Fatalf("rpcBuffers = %v, want %v", got, want)
	}
}

// A worker whose devices are listed only later (it was down) comes before another one's by name:
// what a model holds on the other's device moves with it to its new index.
func TestWorkersDevicesListedLater(t *testing.T) {
	fw := &fakeWorkers{ends: map[string]string{"a": "127.0.0.1:40001", "b": "127.0.0.1:40002"}, errs: map[string]error{},
		devs: []WorkerDevice{{Worker: "b", Name: "RPC0", Total: 16 * gib, Free: 16 * gib}}}
	s := newSync(t, func(o *Options) { o.MemoryLimit = 0; o.Workers = fw },
		syncModel{id: "b2", ramMiB: 1 << 10, vramMiB: 4 << 10, layers: 32, settings: Settings{Workers: []string{"b"}}})
	s.gpus(false)
	w := s.request("b2")
	s.fx.proc(t, "b2").readyWith(map[string]int64{"CPU": 300 << 20, "RPC0[127.0.0.1:40002]": 3 * gib})
	l := s.lease(w)
	defer l.Release()
	fw.mu.Lock()
	fw.devs = append(fw.devs, WorkerDevice{Worker: "a", Name: "RPC0", Total: 8 * gib, Free: 8 * gib})
	fw.mu.Unlock()
	s.gpus(false)
	if st := s.state("b2"); !maps.Equal(st.HeldGPU, map[string]int64{"b/RPC0": 3 * gib}) {
		t.Fatalf("b2 holds %v after a's devices came, want 3 GiB still on b/RPC0", st.HeldGPU)
	}
	if b := s.e.Budget(); len(b.Devices) != 2 || b.Devices[0].Name != "a/RPC0" || b.Devices[0].Used != 0 || b.Devices[1].Used != 3*gib {
		t.Fatalf("devices %+v", b.Devices)
	}
}
