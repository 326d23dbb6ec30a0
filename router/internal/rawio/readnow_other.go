//go:build unix && (!linux || race)

package rawio

import "syscall"

// readNow is one read(2) of fd into p (not empty), through the syscall package.
func readNow(fd int, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(fd, p)
	if err != nil {
		errno, _ := err.(syscall.Errno)
		if errno == 0 {
			errno = syscall.EIO
		}
		return 0, errno
	}
	return n, 0
}
