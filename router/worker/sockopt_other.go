//go:build !linux

package worker

import "syscall"

// setUserTimeout: only Linux has TCP_USER_TIMEOUT; elsewhere the keepalive alone notices a
// vanished worker (on an idle link).
func setUserTimeout(network, address string, c syscall.RawConn) error { return nil }
