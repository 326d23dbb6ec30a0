package cli

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names a file that `llamatray serve` writes a CPU profile of its whole run into; the
// benchmark (router/testbed/bench -cpuprofile) uses it.
const cpuProfileEnv = "LLAMATRAY_CPUPROFILE"

// startCPUProfile starts profiling into path and returns what stops it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
