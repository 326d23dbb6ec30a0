package child

import (
	"os/exec"
	"syscall"
)

// configure makes the child its own process group and asks the kernel to
// SIGKILL it when the thread that forked it exits — which, because the
// supervisor goroutine keeps its OS thread locked for the child's whole life,
// happens only when Llamatray itself dies, even by SIGKILL. Other fields of a
// SysProcAttr the caller set (a Process's namespaces) are kept.
func configure(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pdeathsig = true, syscall.SIGKILL
}
