//go:build windows

package atomicfile

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lock takes an exclusive lock on f, waiting for another holder when wait is set; ErrBusy when
// another holds it and wait is not set.
func lock(f *os.File, wait bool) error {
	flags := uint32(windows.LOCKFILE_EXCLUSIVE_LOCK)
	if !wait {
		flags |= windows.LOCKFILE_FAIL_IMMEDIATELY
	}
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, new(windows.Overlapped))
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return ErrBusy
	}
	return err
}
