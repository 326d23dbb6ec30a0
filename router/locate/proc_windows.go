//go:build windows

package locate

import (
	"os/exec"
	"syscall"
)

// createNoWindow keeps a console program started by the windowless app from opening a console.
const createNoWindow = 0x08000000

func hideWindow(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: createNoWindow, HideWindow: true}
}
