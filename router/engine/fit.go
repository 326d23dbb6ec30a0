package engine

import (
	"slices"
	"strconv"
	"strings"

	"github.com/llamatray/llamatray/router/sched"
)

// Device shares. A child's --fit decides how many layers it offloads inside one child; the engine
// arbitrates between children and passes each, with --fit-target, the margin it must leave free on
// every device, so that it holds no more there than the share the scheduler planned for it (a
// child whose estimate ran low then offloads a few layers fewer instead of taking a neighbour's
// memory). The user's own --fit, --fit-target, -ngl or --tensor-split win: nothing is added.

// offloadFlags are llama-server's flags that decide the offload; when the user's args have one,
// the engine passes no --fit-target.
var offloadFlags = map[string]bool{
	"-fit": true, "--fit": true, "-fitt": true, "--fit-target": true,
	"-ngl": true, "--n-gpu-layers": true, "--gpu-layers": true,
	"-ts": true, "--tensor-split": true,
}

// userOffload reports whether args decide the offload themselves.
func userOffload(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		name, _, _ := strings.Cut(a, "=")
		return offloadFlags[name]
	})
}

// fitted is whether m's child is given its device shares as --fit-target (when it runs on GPUs):
// the llama-server takes it and the user's args do not decide the offload themselves. Called with mu
// held.
func (e *Engine) fitted(m *model) bool { return e.o.FitTarget && !userOffload(m.set.Args) }

// fitArgs is what startModel adds to m's command line: --fit-target with each device's margin
// (sched.Margins), in MiB, unless the llama-server in use does not take it or the user's args decide
// the offload, or the child uses workers: --fit-target lists this machine's devices only, and the
// workers' would come after them. Called with mu held, after m's plan (held) and workers are set.
func (e *Engine) fitArgs(m *model) []string {
	n := e.localGPUs()
	if !e.fitted(m) || n == 0 || len(m.workers) > 0 {
		return nil
	}
	free := e.deviceFree()
	if e.sys.Unified {
		for i, g := range e.gpus()[:n] {
			free[i] = g.Total
		}
	}
	parts := make([]string, n)
	for i, b := range sched.Margins(e.running(), m.id, free[:n], e.sys.Unified) {
		parts[i] = strconv.FormatInt(b>>20, 10)
	}
	return []string{"--fit-target", strings.Join(parts, ",")}
}
