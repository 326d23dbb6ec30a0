package worker

import (
	"os/exec"
	"syscall"
)

// configure makes the rpc-server its own process group and asks the kernel to kill it when the
// owner goroutine's (locked) thread exits, that is when the worker dies, even by SIGKILL.
func configure(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
