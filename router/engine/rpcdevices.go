package engine

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/sched"
)

// RPC devices: each worker's devices (llama.cpp's RPC backend, as `llama-server --rpc END
// --list-devices` lists them) are devices of the engine's per-device budget, after this machine's
// GPUs, workers by name: device "NAME/RPC0" is worker NAME's first. A model's estimate is split
// over this machine's GPUs and its own workers' devices only (sharesFor); a child's buffer report
// names them as llama-server numbers them for that child (RPC0, RPC1, ... over its --rpc ends in
// order), which rpcBuffers turns into the engine's names, so footprints are learned per worker
// device as for GPUs. Their budget is what each listed free when its link opened.

// WorkerDevice is one RPC device of a worker, as listed with that worker's end alone.
type WorkerDevice struct {
	Worker string
	Name   string // RPC0, RPC1, ... as listed with the worker's end alone
	Total  int64
	Free   int64
}

// takeWorkerDevices reads the workers' devices (at each memory sample, so the device order changes
// only there) and, when the workers' devices change (one listed for the first time, before
// another's), moves what every model holds, was planned with and measured to each device's new
// index, by name. Called with mu held, sys already set.
func (e *Engine) takeWorkerDevices(before []string) {
	// The configured workers' devices now, by worker name then order; none without links.
	// Workers.Devices takes no lock of the engine's and does no I/O.
	e.rpcDevs = nil
	if e.o.Workers != nil {
		ds := e.o.Workers.Devices()
		slices.SortStableFunc(ds, func(a, b WorkerDevice) int { return strings.Compare(a.Worker, b.Worker) })
		for _, d := range ds {
			name := d.Worker + "/" + d.Name
			e.rpcDevs = append(e.rpcDevs, mem.GPU{Device: name, Name: name, Total: d.Total, Free: d.Free})
		}
	}
	after := e.deviceNames()
	n := e.localGPUs()
	if slices.Equal(before, after) || len(before) < n || !slices.Equal(before[:n], after[:n]) {
		return // unchanged, or this machine's own GPUs changed: those keep their places as before
	}
	to := make([]int, len(before)) // old index → new index, -1 when the device is gone
	for i, n := range before {
		to[i] = slices.Index(after, n)
	}
	move := func(m *sched.Mem) {
		old := m.GPU
		m.GPU = [sched.MaxGPUs]int64{}
		for i, j := range to {
			if j >= 0 {
				m.GPU[j] += old[i]
			} else {
				m.RAM += old[i] // never lost: counted where it is sure to be looked at
			}
		}
	}
	for _, m := range e.models {
		for _, p := range []*sched.Mem{&m.held, &m.plan, &m.measured, &m.peak, &m.devices} {
			move(p)
		}
	}
	e.log.Info("devices changed", "before", before, "after", after)
}

// deviceNames are the engine's devices' names, in order. Called with mu held.
func (e *Engine) deviceNames() []string {
	gs := e.gpus()
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = deviceName(g, i)
	}
	return out
}

// localGPUs is how many of e.gpus() are this machine's own. Called with mu held.
func (e *Engine) localGPUs() int {
	if !e.sysOK {
		return 0
	}
	return min(len(e.sys.GPUs), sched.MaxGPUs)
}

// workerOf is the worker whose device "NAME/RPCk" is; "" for this machine's own.
func workerOf(device string) string {
	w, _, ok := strings.Cut(device, "/")
	if !ok {
		return ""
	}
	return w
}

// sharesFor are the devices' weights m's estimate is split by (llama.cpp's default layer split
// weighs devices by their memory): each device's total, or its limit when that is lower, on this
// machine's devices and those of m's own workers. Called with mu held.
func (e *Engine) sharesFor(m *model) []int64 {
	ws := m.set.Workers
	if m.state.Running() {
		ws = m.workers
	}
	gs := e.gpus()
	out := make([]int64, len(gs))
	for i, g := range gs {
		if w := workerOf(deviceName(g, i)); w != "" && i >= e.localGPUs() && !slices.Contains(ws, w) {
			continue
		}
		out[i] = g.Total
		if l := e.deviceLimit(g, i); l > 0 && l < out[i] {
			out[i] = l
		}
	}
	return out
}

// rpcBuffers renames the RPC devices of m's child's buffer report to the engine's names
// (NAME/RPCk). llama-server names each by its server's own device number and end,
// "RPC0[127.0.0.1:40001]": the end is the link of one of m's workers (m.rpc); a name without an end,
// "RPCj", counts over its workers' devices in --rpc order. Called with mu held.
func (e *Engine) rpcBuffers(m *model, b map[string]int64) map[string]int64 {
	if len(m.workers) == 0 || len(b) == 0 {
		return b
	}
	var ends []string
	if len(m.rpc) == 2 {
		ends = strings.Split(m.rpc[1], ",")
	}
	var order []string // the workers' devices, in --rpc order
	devs := e.rpcDevs
	for _, w := range m.workers {
		for _, g := range devs {
			if workerOf(g.Device) == w {
				order = append(order, g.Device)
			}
		}
	}
	out := maps.Clone(b)
	for name, n := range b {
		k, ok := strings.CutPrefix(name, "RPC")
		if !ok {
			continue
		}
		to := ""
		if num, end, ok := strings.Cut(strings.TrimSuffix(k, "]"), "["); ok {
			if i := slices.Index(ends, end); i >= 0 && i < len(m.workers) {
				to = m.workers[i] + "/RPC" + num
			}
		} else if i, err := strconv.Atoi(k); err == nil && i >= 0 && i < len(order) {
			to = order[i]
		}
		if to != "" {
			delete(out, name)
			out[to] += n
		}
	}
	return out
}
