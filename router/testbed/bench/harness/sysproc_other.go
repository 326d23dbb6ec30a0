//go:build !linux

package harness

import "os/exec"

// setProcAttr leaves the defaults: the harnesses are measured on Linux.
func setProcAttr(cmd *exec.Cmd) {}

// killGroup kills the server process.
func killGroup(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
}
