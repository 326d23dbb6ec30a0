package worker

import (
	"syscall"
)

// setUserTimeout sets TCP_USER_TIMEOUT: a connection whose sent data stays unacknowledged that
// long fails, so a worker machine that vanished mid-transfer is noticed in seconds, not minutes.
func setUserTimeout(network, address string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, 0x12 /* TCP_USER_TIMEOUT */, int(userTimeout.Milliseconds()))
	})
	if err != nil {
		return err
	}
	return serr
}
