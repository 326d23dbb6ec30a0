package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/llamatray/llamatray/router/envconfig"
	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/sched"
	"github.com/llamatray/llamatray/router/testbed/simhold"
)

// simBuffers is what the fake holds on a simulated machine (envconfig.SimMachine): its weights and KV cache
// split over the machine's GPUs by the layers -ngl offloads, in proportion to each GPU's memory
// (llama.cpp's default layer split), the rest in RAM, plus a compute buffer on each device used.
type simBuffers struct {
	path    string
	devices []string                    // device names in the machine's order
	bufs    map[string]map[string]int64 // kind (model, KV, compute) → device (or "CPU") → bytes
	unified bool
	rpc     map[string]*rpcEnd // the RPC devices (after the GPUs in devices) → their server
}

// simComputeMiB is the compute buffer on each device a model uses, about what llama.cpp reserves
// for a 4096-token context.
const simComputeMiB = 300

// simBuffers reads the simulated machine; nil when there is none.
func (s *server) simBuffers() *simBuffers {
	path := envconfig.SimMachine.Get()
	if path == "" {
		return nil
	}
	m, err := mem.LoadSimMachine(path)
	if err != nil {
		logf(lvlError, "fakellama: %v", err)
		s.failLoad(err.Error())
	}
	gpus := m.Devices()
	shares := make([]int64, len(gpus))
	var names []string
	for i, g := range gpus {
		shares[i] = g.Total
		names = append(names, g.Device)
	}
	// The --rpc servers' devices come after the machine's own, in --rpc order.
	for _, e := range s.rpc {
		shares = append(shares, e.total)
		names = append(names, e.device())
	}
	layers := s.kn.SimLayers
	off := offloaded(s.opts.gpuLayers, layers)
	if len(names) == 0 {
		off = 0
	}
	sb := layout(path, m.Unified, names, shares, off, layers, s.kn)
	// --fit (on unless -ngl is given, as llama.cpp's adjusts only what is unset): offload fewer
	// layers until every device keeps its --fit-target margin free.
	if s.opts.fit && s.opts.gpuLayers == "auto" && len(names) > 0 {
		sys, err := mem.Sim(path).System(context.Background())
		if err != nil {
			logf(lvlError, "fakellama: %v", err)
			s.failLoad(err.Error())
		}
		// What each device has free as llama.cpp sees it: the driver's free memory; on Metal the
		// working set less this process's own allocations (none yet).
		free := make([]int64, len(names))
		for i := range names {
			switch {
			case i >= len(gpus):
				free[i] = s.rpc[i-len(gpus)].free
			case m.Unified:
				free[i] = gpus[i].Total
			default:
				free[i] = sys.GPUs[i].Free
			}
			free[i] -= fitMargin(s.opts.fitTarget, i)
		}
		for off > 0 && !sb.within(free) {
			off--
			sb = layout(path, m.Unified, names, shares, off, layers, s.kn)
		}
		if off < layers+1 {
			logf(lvlInfo, "llama_params_fit_impl: fitting the model in device memory: %d of %d layers offloaded", off, layers+1)
			s.rec.write(recordEvent{Event: "fit", Model: s.modelID, Layers: &off})
		}
	}
	logf(lvlInfo, "load_tensors: offloaded %d/%d layers to GPU", off, layers+1)
	sb.rpc = map[string]*rpcEnd{}
	for _, e := range s.rpc {
		sb.rpc[e.device()] = e
	}
	return sb
}

// fitMargin is device i's --fit-target margin: its own value, the single value of every device, or
// llama.cpp's 1024 MiB.
func fitMargin(target []int64, i int) int64 {
	switch {
	case i < len(target):
		return target[i]
	case len(target) == 1:
		return target[0]
	}
	return 1024 << 20
}

// layout places the weights and the KV cache of off of layers+1 layers (the output layer counts as
// one) on the devices in proportion to shares, the rest in RAM, and a compute buffer on each device
// used.
func layout(path string, unified bool, devices []string, shares []int64, off, layers int, kn knobs) *simBuffers {
	sb := &simBuffers{path: path, devices: devices, bufs: map[string]map[string]int64{}, unified: unified}
	split := func(kind string, total int64, parts int) {
		onGPU := total * int64(off) / int64(parts)
		m := sched.Split(total-onGPU, onGPU, off, shares)
		out := map[string]int64{"CPU": m.RAM}
		for i, d := range sb.devices {
			if m.GPU[i] > 0 {
				out[d] = m.GPU[i]
			}
		}
		sb.bufs[kind] = out
	}
	split("model", int64(kn.SimModelMiB)<<20, layers+1)
	split("KV", int64(kn.SimKVMiB)<<20, layers+1)
	comp := map[string]int64{"CPU": 16 << 20}
	for d := range sb.bufs["model"] {
		if d != "CPU" {
			comp[d] = simComputeMiB << 20
		}
	}
	sb.bufs["compute"] = comp
	return sb
}

// within is whether what b puts on each device fits in room (by device, in the machine's order).
func (b *simBuffers) within(room []int64) bool {
	for i, d := range b.devices {
		var n int64
		for _, bufs := range b.bufs {
			n += bufs[d]
		}
		if n > room[i] {
			return false
		}
	}
	return true
}

// offloaded is how many of layers+1 (the output layer) -ngl puts on the GPUs.
func offloaded(ngl string, layers int) int {
	switch ngl {
	case "auto", "all", "":
		return layers + 1
	}
	n, err := strconv.Atoi(ngl)
	if err != nil || n < 0 || n > layers {
		return layers + 1
	}
	return n
}

// print writes llama.cpp's buffer lines of one kind, host first, then the devices in order.
func (b *simBuffers) print(kind string) {
	prefix := map[string]string{"model": "load_tensors", "KV": "llama_kv_cache", "compute": "sched_reserve"}[kind]
	host := "CPU"
	if kind == "model" {
		host = "CPU_Mapped"
	}
	if n := b.bufs[kind]["CPU"]; n > 0 || kind == "model" {
		logf(lvlInfo, "%s: %12s %s buffer size = %8.2f MiB", prefix, host, kind, float64(n)/(1<<20))
	}
	for _, d := range b.devices {
		if n, ok := b.bufs[kind][d]; ok {
			logf(lvlInfo, "%s: %12s %s buffer size = %8.2f MiB", prefix, d, kind, float64(n)/(1<<20))
		}
	}
}

// hold books what the fake holds on the machine: everything while awake, a little RAM asleep. What
// it holds on an RPC device it tells that device's server instead.
func (b *simBuffers) hold(awake bool) {
	h := mem.SimHolding{RAM: 64 << 20, Devices: map[string]int64{}}
	onRPC := map[string]int64{}
	if awake {
		h.RAM = 0
		for _, bufs := range b.bufs {
			for d, n := range bufs {
				switch {
				case d == "CPU":
					h.RAM += n
				case b.rpc[d] != nil:
					onRPC[d] += n
				default:
					h.Devices[d] += n
				}
			}
		}
	}
	if err := simhold.Hold(b.path, os.Getpid(), h); err != nil {
		logf(lvlWarn, "fakellama: %v", err)
	}
	for d, e := range b.rpc {
		if err := e.hold(onRPC[d]); err != nil {
			logf(lvlWarn, "fakellama: RPC server %s: %v", e.addr, err)
		}
	}
}

func (b *simBuffers) release() { simhold.Release(b.path, os.Getpid()) }

// listDevices prints the simulated machine's GPUs, then each --rpc server's device (RPC0, its
// description the server's address), as llama-server --list-devices does; a server that does not
// accept the connection is an error (exit 1), as it is for llama-server.
func listDevices(rpc []string) {
	ends := connectRPC(rpc, nil)
	fmt.Println("Available devices:")
	var gpus []mem.GPU
	if path := envconfig.SimMachine.Get(); path != "" {
		m, err := mem.LoadSimMachine(path)
		if err != nil {
			rawLog("fakellama: %v", err)
			os.Exit(1)
		}
		gpus = m.Devices()
	}
	if len(gpus)+len(ends) == 0 {
		fmt.Println("  (none)")
	}
	for _, g := range gpus {
		fmt.Printf("  %s: %s (%d MiB, %d MiB free)\n", g.Device, g.Name, g.Total>>20, g.Free>>20)
	}
	for _, e := range ends {
		fmt.Printf("  RPC0: %s (%d MiB, %d MiB free)\n", e.addr, e.total>>20, e.free>>20)
		e.conn.Close()
	}
}
