//go:build !windows

package locate

import "os/exec"

// hideWindow does nothing outside Windows: no console window opens for a child.
func hideWindow(*exec.Cmd) {}
