package cli

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/llamatray/llamatray/router/envconfig"
)

// startCPUProfile starts profiling into path and returns what stops it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envconfig.CPUProfile, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", envconfig.CPUProfile, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
