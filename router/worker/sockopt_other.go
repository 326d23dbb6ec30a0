//go:build !linux && !darwin && !windows

package worker

import "syscall"

// setUserTimeout: the BSDs have no TCP_USER_TIMEOUT; there the keepalive alone notices a
// vanished worker (on an idle link).
func setUserTimeout(network, address string, c syscall.RawConn) error { return nil }
