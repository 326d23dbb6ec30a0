package worker

import (
	"encoding/binary"
	"net"
	"testing"
)

// tcpRow4 is a MIB_TCPROW_OWNER_PID as Windows lays it out.
func tcpRow4(local, remote *net.TCPAddr, pid uint32) []byte {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint32(b, 5) // MIB_TCP_STATE_ESTAB
	copy(b[4:], local.IP.To4())
	binary.BigEndian.PutUint16(b[8:], uint16(local.Port))
	copy(b[12:], remote.IP.To4())
	binary.BigEndian.PutUint16(b[16:], uint16(remote.Port))
	binary.LittleEndian.PutUint32(b[20:], pid)
	return b
}

// tcpRow6 is a MIB_TCP6ROW_OWNER_PID.
func tcpRow6(local, remote *net.TCPAddr, pid uint32) []byte {
	b := make([]byte, 56)
	copy(b[0:], local.IP.To16())
	binary.BigEndian.PutUint16(b[20:], uint16(local.Port))
	copy(b[24:], remote.IP.To16())
	binary.BigEndian.PutUint16(b[44:], uint16(remote.Port))
	binary.LittleEndian.PutUint32(b[48:], 5)
	binary.LittleEndian.PutUint32(b[52:], pid)
	return b
}

func tcpTableOf(rows ...[]byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(rows)))
	for _, r := range rows {
		b = append(b, r...)
	}
	return append(b, make([]byte, 100)...) // the buffer is larger than the table
}

func TestFindSocket(t *testing.T) {
	a := func(s string) *net.TCPAddr {
		ta, err := net.ResolveTCPAddr("tcp", s)
		if err != nil {
			t.Fatal(err)
		}
		return ta
	}
	client, end := a("127.0.0.1:50123"), a("127.0.0.1:41000")
	v4 := tcpTableOf(
		tcpRow4(end, client, 4),                  // the End's own side of the connection
		tcpRow4(client, a("127.0.0.1:41001"), 7), // the same port to another End
		tcpRow4(a("10.0.0.2:50123"), end, 8),
		tcpRow4(client, end, 1234),
	)
	if pid, ok := findSocket(v4, false, client, end); !ok || pid != 1234 {
		t.Fatalf("IPv4: pid %d, %v; want 1234", pid, ok)
	}
	if _, ok := findSocket(v4, false, a("127.0.0.1:50124"), end); ok {
		t.Fatal("IPv4: found a socket not in the table")
	}
	if _, ok := findSocket(v4[:4+2*24], false, client, end); ok {
		t.Fatal("a truncated table: read past its end")
	}
	c6, e6 := a("[::1]:50123"), a("[::1]:41000")
	v6 := tcpTableOf(tcpRow6(e6, c6, 4), tcpRow6(c6, e6, 99))
	if pid, ok := findSocket(v6, true, c6, e6); !ok || pid != 99 {
		t.Fatalf("IPv6: pid %d, %v; want 99", pid, ok)
	}
	if _, ok := findSocket(nil, false, client, end); ok {
		t.Fatal("an empty table")
	}
}

func TestDescends(t *testing.T) {
	const me = 100
	type proc struct {
		parent  uint32
		created int64
	}
	procs := map[uint32]proc{
		me:  {4, 50},
		4:   {0, 1},
		200: {me, 60},   // llama-server
		201: {200, 61},  // its child
		300: {4, 70},    // another process of this machine
		301: {300, 71},  // its child
		400: {me, 40},   // its parent exited, and its id is this process's now: created before it
		401: {400, 41},  // a child of that one
		500: {501, 80},  // a loop of stale ids
		501: {500, 81},  // (each created after the other's link: refused by the times anyway)
		600: {601, 90},  // its parent is not listed (ended)
		700: {me, 1000}, // a child that cannot be opened (no creation time)
	}
	parent := func(p uint32) (uint32, bool) { q, ok := procs[p]; return q.parent, ok }
	created := func(p uint32) (int64, bool) {
		if p == 700 {
			return 0, false
		}
		q, ok := procs[p]
		return q.created, ok
	}
	for pid, want := range map[uint32]bool{me: true, 200: true, 201: true, 300: false, 301: false, 4: false,
		400: false, 401: false, 500: false, 600: false, 700: false, 999: false} {
		if got := descends(pid, me, parent, created); got != want {
			t.Errorf("descends(%d) = %v, want %v", pid, got, want)
		}
	}
	// A chain longer than maxDepth is refused.
	long := func(p uint32) (uint32, bool) { return p - 1, true }
	if descends(me+maxDepth+1, me, long, func(p uint32) (int64, bool) { return int64(p), true }) {
		t.Error("a chain of more than maxDepth parents accepted")
	}
	if !descends(me+maxDepth-1, me, long, func(p uint32) (int64, bool) { return int64(p), true }) {
		t.Error("a chain within maxDepth refused")
	}
}
