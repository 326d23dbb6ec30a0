//go:build unix

package atomicfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lock takes an exclusive lock on f, waiting for another holder when wait is set; ErrBusy when
// another holds it and wait is not set.
func lock(f *os.File, wait bool) error {
	how := unix.LOCK_EX
	if !wait {
		how |= unix.LOCK_NB
	}
	err := unix.Flock(int(f.Fd()), how)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrBusy
	}
	return err
}
