package worker

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// setUserTimeout sets TCP_RXT_CONNDROPTIME, macOS's TCP_USER_TIMEOUT: a connection whose sent
// data stays unacknowledged that long (in seconds) is dropped, so a worker machine that vanished
// mid-transfer is noticed in seconds, not minutes.
func setUserTimeout(network, address string, c syscall.RawConn) error {
	// Best effort: a system without the option (Wine, an older release) keeps the keepalive alone,
	// rather than failing every listen and dial of the link.
	return c.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_RXT_CONNDROPTIME, int(userTimeout.Seconds()))
	})
}
