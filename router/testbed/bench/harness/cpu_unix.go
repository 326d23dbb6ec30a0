//go:build unix

package harness

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user + system) this process has used so far; ok is false where it
// cannot be read.
func ProcessCPU() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
