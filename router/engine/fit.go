package engine

import (
	"strconv"
	"strings"
)

// Device shares. A child's --fit decides how many layers it offloads inside one child; the engine
// arbitrates between children and passes each, with --fit-target, the margin it must leave free on
// every device, so that it holds no more there than the share the scheduler planned for it (a
// child whose estimate ran low then offloads a few layers fewer instead of taking a neighbour's
// memory). The user's own --fit, --fit-target, -ngl or --tensor-split win: nothing is added.

// fitFloor is the least margin a child is asked to leave free on a device.
const fitFloor = 128 << 20

// offloadFlags are llama-server's flags that decide the offload; when the user's args have one,
// the engine passes no --fit-target.
var offloadFlags = map[string]bool{
	"-fit": true, "--fit": true, "-fitt": true, "--fit-target": true,
	"-ngl": true, "--n-gpu-layers": true, "--gpu-layers": true,
	"-ts": true, "--tensor-split": true,
}

// userOffload reports whether args decide the offload themselves.
func userOffload(args []string) bool {
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if offloadFlags[name] {
			return true
		}
	}
	return false
}

// fitTarget is the --fit-target argument for a child planned to hold share[i] on device i, where
// free[i] is what the device will have free for it when it loads (as it sees the device): each
// device's margin is free − share, at least fitFloor, in MiB. Nil without devices.
func fitTarget(free, share []int64) []string {
	if len(free) == 0 || len(free) != len(share) {
		return nil
	}
	parts := make([]string, len(free))
	for i := range free {
		parts[i] = strconv.FormatInt(max(free[i]-share[i], fitFloor)>>20, 10)
	}
	return []string{"--fit-target", strings.Join(parts, ",")}
}

// fitted is whether m's child is given its device shares as --fit-target (when it runs on GPUs):
// the llama-server takes it and the user's args do not decide the offload themselves. Called with mu
// held.
func (e *Engine) fitted(m *model) bool { return e.o.FitTarget && !userOffload(m.set.Args) }

// fitArgs is what startModel adds to m's command line: --fit-target with each device's margin,
// unless the llama-server in use does not take it or the user's args decide the offload. What a
// device has free for m is what the last sample saw free, plus what our children held in it, less
// what every other model holds or is promised there; on unified memory (Metal) a child sees the
// whole working set as its own, so its margin is the working set less its share. Called with mu
// held, after m's plan (held) is set.
func (e *Engine) fitArgs(m *model) []string {
	gs := e.gpus()[:e.localGPUs()] // a child without --rpc sees this machine's devices only
	if !e.fitted(m) || len(gs) == 0 {
		return nil
	}
	free := make([]int64, len(gs))
	share := make([]int64, len(gs))
	for i, g := range gs {
		share[i] = m.held.GPU[i]
		if e.sys.Unified {
			free[i] = g.Total
			continue
		}
		free[i] = e.freeFor(m, i)
	}
	return fitTarget(free, share)
}

// freeFor is what device i has free for m: what the last sample saw free, plus what our children
// held in it, less what every other model holds or is promised there. Called with mu held.
func (e *Engine) freeFor(m *model, i int) int64 {
	free := e.gpus()[i].Free
	for _, o := range e.models {
		if !o.state.Running() {
			continue
		}
		free += o.measured.GPU[i]
		if o != m {
			free -= o.held.GPU[i]
		}
	}
	return free
}
