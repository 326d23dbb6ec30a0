//go:build !unix

package harness

import "time"

// ProcessCPU is not measured on this platform.
func ProcessCPU() (time.Duration, bool) { return 0, false }
