//go:build !linux

package worker

import "net"

// sameUser: only Linux tells here who owns the connecting socket (/proc/net/tcp). On Windows
// (GetExtendedTcpTable's owning pid, not in golang.org/x/sys/windows) and on macOS and the BSDs
// every local connection to the End is carried: there any local user who can read the End's port
// (published in /api/status) can use the worker without its token.
func sameUser(net.Conn) (bool, error) { return true, nil }
