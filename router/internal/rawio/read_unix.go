//go:build unix

package rawio

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// ErrEmpty is ReadNow's answer for a descriptor that holds nothing to read now.
var ErrEmpty = errors.New("nothing to read now")

// ReadNow reads what the non-blocking descriptor fd holds, without waiting: ErrEmpty when it
// holds nothing, io.EOF at its end (a pipe whose every writer closed), an *os.SyscallError else.
func ReadNow(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, errno := readNow(fd, p)
		switch errno {
		case 0:
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, ErrEmpty
		}
		return 0, os.NewSyscallError("read", errno)
	}
}
