//go:build !linux

package harness

import (
	"os/exec"
	"time"
)

// setProcAttr leaves the defaults: the harnesses are measured on Linux.
func setProcAttr(cmd *exec.Cmd) {}

// killGroup kills the server process.
func killGroup(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
}

// procCPU is not read on this system.
func procCPU(pid int) (time.Duration, bool) { return 0, false }
