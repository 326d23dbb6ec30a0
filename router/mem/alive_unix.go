//go:build !windows

package mem

import "syscall"

// alive reports whether process pid exists.
func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) != syscall.ESRCH }
