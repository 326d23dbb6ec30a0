//go:build unix && !linux

package child

import (
	"os/exec"
	"syscall"
)

// configure makes the child its own process group. These systems have no
// parent-death signal: a child of a killed Llamatray exits through its stdin
// orphan guard, which llama-server only reads after loading (see the package
// documentation).
func configure(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}
