package worker

import (
	"errors"
	"fmt"
	"net"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

var procGetExtendedTcpTable = windows.NewLazySystemDLL("iphlpapi.dll").NewProc("GetExtendedTcpTable")

// tcpTableOwnerPIDConnections is TCP_TABLE_OWNER_PID_CONNECTIONS: the connected sockets, each
// with its owning process.
const tcpTableOwnerPIDConnections = 4

// ownProcess says whether the process at the other end of c, a connection accepted on the End's
// loopback listener, is this process or one of its descendants (llama-server, which Llamatray
// starts): the connecting socket (local address c's remote one, remote address c's local one) is
// found in GetExtendedTcpTable with its owning pid, and that pid's parents (a Toolhelp snapshot)
// must lead to this process (descends). A socket or process not found (it ended already) is
// refused.
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
	parent, err := parents()
	if err != nil {
		return false, err
	}
	me := uint32(os.Getpid())
	pp := func(p uint32) (uint32, bool) { q, ok := parent[p]; return q, ok }
	if !descends(pid, me, pp, created) {
		return false, fmt.Errorf("process %d is not this process's (%d) nor one of its descendants", pid, me)
	}
	return true, nil
}

// parents maps each running process to its parent's id, from a Toolhelp snapshot.
func parents() (map[uint32]uint32, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, fmt.Errorf("process snapshot: %w", err)
	}
	defer windows.CloseHandle(snap)
	out := map[uint32]uint32{}
	var e windows.ProcessEntry32
	e.Size = uint32(unsafe.Sizeof(e))
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		out[e.ProcessID] = e.ParentProcessID
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return nil, fmt.Errorf("process snapshot: %w", err)
	}
	return out, nil
}

// created is when process pid was created (100 ns since 1601); false when it cannot be opened.
func created(pid uint32) (int64, bool) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return 0, false
	}
	defer windows.CloseHandle(h)
	var c, x, k, u windows.Filetime
	if windows.GetProcessTimes(h, &c, &x, &k, &u) != nil {
		return 0, false
	}
	return int64(c.HighDateTime)<<32 | int64(c.LowDateTime), true
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
