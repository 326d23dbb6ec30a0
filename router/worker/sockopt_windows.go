package worker

import "syscall"

// tcpMaxRT is TCP_MAXRT (ws2ipdef.h): an IPPROTO_TCP option, the seconds a retransmission may go
// unacknowledged before the connection is dropped.
const tcpMaxRT = 5

// setUserTimeout sets TCP_MAXRT, Windows' TCP_USER_TIMEOUT: a worker machine that vanished
// mid-transfer is noticed in seconds, not minutes.
func setUserTimeout(network, address string, c syscall.RawConn) error {
	// Best effort: a system without the option (Wine, an older release) keeps the keepalive alone,
	// rather than failing every listen and dial of the link.
	return c.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(syscall.Handle(fd), syscall.IPPROTO_TCP, tcpMaxRT, int(userTimeout.Seconds()))
	})
}
