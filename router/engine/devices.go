package engine

import (
	"slices"
	"strconv"

	"github.com/llamatray/llamatray/router/mem"
	"github.com/llamatray/llamatray/router/sched"
)

// Devices: the engine numbers the GPUs of the last memory sample (e.sys.GPUs) in order; index i is
// sched.Mem.GPU[i]. A device's name is llama-server's (CUDA0, Vulkan0, MTL0) when the probe knows it,
// else "GPU<i>". Budgets are per device: what the device has free plus what our children hold on it,
// at most its configured limit (Options.DeviceLimits).

// gpus is the devices the scheduler counts: none without a sample. Called with mu held.
func (e *Engine) gpus() []mem.GPU {
	if !e.sysOK {
		return nil
	}
	g := append(slices.Clip(e.sys.GPUs[:e.localGPUs()]), e.rpcDevs...) // the workers' after ours (rpcdevices.go)
	return g[:min(len(g), sched.MaxGPUs)]
}

// deviceName is the name of device i.
func deviceName(g mem.GPU, i int) string {
	if g.Device != "" {
		return g.Device
	}
	return "GPU" + strconv.Itoa(i)
}

// deviceIndex maps a device name of a buffer report or a footprint to its index; -1 when the machine
// has no such device. Called with mu held.
func (e *Engine) deviceIndex(name string) int {
	for i, g := range e.gpus() {
		if deviceName(g, i) == name || g.Name == name {
			return i
		}
	}
	return -1
}

// deviceLimit is the configured limit of device i, 0 when none.
func (e *Engine) deviceLimit(g mem.GPU, i int) int64 {
	if n, ok := e.o.DeviceLimits[deviceName(g, i)]; ok && n > 0 {
		return n
	}
	return e.o.DeviceLimits[g.Name]
}

// onDevices turns a per-device byte map (a buffer report, a learned footprint) into a Mem: ram as
// RAM, each known device at its index. Bytes on a device this machine does not have count as RAM, so
// they are never lost. On unified memory the GPU's bytes are RAM too. Called with mu held.
func (e *Engine) onDevices(ram int64, devs map[string]int64) sched.Mem {
	out := sched.Mem{RAM: ram}
	for name, n := range devs {
		i := e.deviceIndex(name)
		if i < 0 {
			out.RAM += n
			continue
		}
		out.GPU[i] += n
		if e.sys.Unified && i < e.localGPUs() {
			out.RAM += n
		}
	}
	return out
}

// deviceBytes is m's GPU part by device name (for footprints, logs and wait reasons), on the devices
// where it has some, or with zeros on every device. Called with mu held.
func (e *Engine) deviceBytes(m sched.Mem, zeros bool) map[string]int64 {
	var out map[string]int64
	for i, g := range e.gpus() {
		if m.GPU[i] > 0 || zeros {
			if out == nil {
				out = map[string]int64{}
			}
			out[deviceName(g, i)] = m.GPU[i]
		}
	}
	return out
}

// shown is m as one figure for display: on unified memory the GPU's bytes are already in RAM.
func (e *Engine) shown(m sched.Mem) int64 {
	if e.sys.Unified {
		return m.RAM
	}
	return m.Total()
}

// tooLarge names the dimension need is over ceiling in: a device, else RAM. Called with mu held.
func (e *Engine) tooLarge(id string, need, ceiling sched.Mem) *TooLargeError {
	for i, g := range e.gpus() {
		if need.GPU[i] > ceiling.GPU[i] {
			return &TooLargeError{Model: id, Need: need.GPU[i], Budget: ceiling.GPU[i], Device: deviceName(g, i)}
		}
	}
	return &TooLargeError{Model: id, Need: need.RAM, Budget: ceiling.RAM}
}
