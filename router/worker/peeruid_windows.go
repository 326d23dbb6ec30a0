package worker

import (
	"errors"
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/windows"
)

var procGetExtendedTcpTable = windows.NewLazySystemDLL("iphlpapi.dll").NewProc("GetExtendedTcpTable")

// tcpTableOwnerPIDConnections is TCP_TABLE_OWNER_PID_CONNECTIONS: the connected sockets, each
// with its owning process.
const tcpTableOwnerPIDConnections = 4

// ownProcess says whether the process at the other end of c, a connection accepted on the End's
// loopback listener, runs as this process's user (Windows: the user, not the process, is checked): the connecting socket (local address c's
// remote one, remote address c's local one) is found in GetExtendedTcpTable with its owning pid,
// whose token's user is compared with this process's. A socket or process not found (it ended
// already) or another user's process that cannot be opened is refused.
func ownProcess(c net.Conn) (bool, error) {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return false, fmt.Errorf("not a TCP connection: %s", c.RemoteAddr())
	}
	pid, err := socketPID(remote, local)
	if err != nil {
		return false, err
	}
	me, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return false, fmt.Errorf("this process's user: %w", err)
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return false, fmt.Errorf("process %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	var tok windows.Token
	if err := windows.OpenProcessToken(h, windows.TOKEN_QUERY, &tok); err != nil {
		return false, fmt.Errorf("process %d's token: %w", pid, err)
	}
	defer tok.Close()
	them, err := tok.GetTokenUser()
	if err != nil {
		return false, fmt.Errorf("process %d's user: %w", pid, err)
	}
	return me.User.Sid.Equals(them.User.Sid), nil
}

// socketPID is the pid owning the TCP socket from local to remote, from the IPv4 and IPv6 tables.
func socketPID(local, remote *net.TCPAddr) (uint32, error) {
	for _, af := range []uint32{windows.AF_INET, windows.AF_INET6} {
		tab, err := tcpTable(af)
		if err != nil {
			return 0, err
		}
		if pid, ok := findSocket(tab, af == windows.AF_INET6, local, remote); ok {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no socket %s -> %s in the TCP tables", local, remote)
}

// tcpTable is GetExtendedTcpTable's MIB_TCPTABLE_OWNER_PID (or MIB_TCP6TABLE_OWNER_PID) for af.
func tcpTable(af uint32) ([]byte, error) {
	size := uint32(64 << 10)
	for range 4 {
		buf := make([]byte, size)
		r, _, _ := procGetExtendedTcpTable.Call(uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0,
			uintptr(af), tcpTableOwnerPIDConnections, 0)
		switch windows.Errno(r) {
		case 0:
			return buf, nil
		case windows.ERROR_INSUFFICIENT_BUFFER:
			size += 4 << 10 // it may grow before the next call
			continue
		default:
			return nil, fmt.Errorf("GetExtendedTcpTable: %w", windows.Errno(r))
		}
	}
	return nil, errors.New("GetExtendedTcpTable: the table keeps growing")
}
