//go:build unix && !linux

package worker

import (
	"os/exec"
	"syscall"
)

// configure makes the rpc-server its own process group (killed with it by kill).
func configure(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
