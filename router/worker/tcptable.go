package worker

import (
	"encoding/binary"
	"net"
)

// findSocket finds the row from local to remote in tab, a table of Windows' GetExtendedTcpTable
// (TCP_TABLE_OWNER_PID_CONNECTIONS; the IPv6 one when v6), and returns its owning pid. It is used
// by peeruid_windows.go and kept here, free of Windows calls, to be tested everywhere. The rows
// (after the DWORD count) are MIB_TCPROW_OWNER_PID, 6 DWORDs: state, local address, local port,
// remote address, remote port, pid; or MIB_TCP6ROW_OWNER_PID, 56 bytes: local address (16), scope,
// local port, remote address (16), scope, remote port, state, pid. Addresses are in network order,
// ports in network order in their DWORD's first two bytes, the rest little-endian.
func findSocket(tab []byte, v6 bool, local, remote *net.TCPAddr) (uint32, bool) {
	if len(tab) < 4 {
		return 0, false
	}
	n := int(binary.LittleEndian.Uint32(tab))
	rowLen, ipLen := 24, 4
	lIP, lPort, rIP, rPort, pidAt := 4, 8, 12, 16, 20
	if v6 {
		rowLen, ipLen = 56, 16
		lIP, lPort, rIP, rPort, pidAt = 0, 20, 24, 44, 52
	}
	port := func(b []byte) int { return int(binary.BigEndian.Uint16(b)) }
	for i := range n {
		off := 4 + i*rowLen
		if off+rowLen > len(tab) {
			break
		}
		row := tab[off : off+rowLen]
		if port(row[lPort:]) != local.Port || port(row[rPort:]) != remote.Port {
			continue
		}
		if !net.IP(row[lIP:lIP+ipLen]).Equal(local.IP) || !net.IP(row[rIP:rIP+ipLen]).Equal(remote.IP) {
			continue
		}
		return binary.LittleEndian.Uint32(row[pidAt:]), true
	}
	return 0, false
}

// maxDepth bounds the parents descends follows.
const maxDepth = 32

// descends says whether pid is me or a descendant of me (Windows: peeruid_windows.go): its chain
// of parents reaches me, each parent created no later than its child. Windows keeps a process's
// parent id after the parent exits, and that id may since name a newer process (this one, or
// one of its children): such a link is refused by the creation times. A process not listed or
// not opened (it ended) breaks the chain.
func descends(pid, me uint32, parent func(uint32) (uint32, bool), created func(uint32) (int64, bool)) bool {
	for range maxDepth {
		if pid == me {
			return true
		}
		pp, ok := parent(pid)
		if !ok || pp == 0 || pp == pid {
			return false
		}
		child, ok1 := created(pid)
		par, ok2 := created(pp)
		if !ok1 || !ok2 || par > child {
			return false
		}
		pid = pp
	}
	return false
}
