package child

import (
	"os/exec"
	"syscall"
)

// configure makes the child its own process group and asks the kernel to
// SIGKILL it when the thread that forked it exits — which, because the
// supervisor goroutine keeps its OS thread locked for the child's whole life,
// happens only when Llamatray itself dies, even by SIGKILL.
func configure(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
