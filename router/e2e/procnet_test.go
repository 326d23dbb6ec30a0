package e2e

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tcpListener is one listening TCP socket of /proc/PID/net/tcp{,6}.
type tcpListener struct {
	ip    net.IP
	port  int
	inode string
}

// tcpListeners reads the listening TCP sockets of the network namespace that proc (a /proc
// entry: "self" or a pid) is in.
func tcpListeners(t *testing.T, proc string) []tcpListener {
	t.Helper()
	var out []tcpListener
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join("/proc", proc, "net", name))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || fs[3] != "0A" { // 0A: LISTEN
				continue
			}
			hexIP, hexPort, ok := strings.Cut(fs[1], ":")
			raw, err1 := hex.DecodeString(hexIP)
			port, err2 := strconv.ParseUint(hexPort, 16, 16)
			if !ok || err1 != nil || err2 != nil || len(raw)%4 != 0 {
				continue
			}
			ip := make(net.IP, len(raw)) // each 32-bit word in hex is in host byte order
			for i := 0; i < len(raw); i += 4 {
				binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
			}
			out = append(out, tcpListener{ip: ip, port: int(port), inode: fs[9]})
		}
		f.Close()
	}
	return out
}

// socketInodes are the inodes of the sockets pid holds open.
func socketInodes(t *testing.T, pid int) map[string]bool {
	t.Helper()
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("the sockets of pid %d: %v", pid, err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		l, err := os.Readlink(filepath.Join(dir, e.Name()))
		if inode, ok := strings.CutPrefix(l, "socket:["); err == nil && ok {
			out[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return out
}

// ownListeners are the listening sockets among ls that pid holds.
func ownListeners(ls []tcpListener, inodes map[string]bool) []tcpListener {
	var out []tcpListener
	for _, l := range ls {
		if inodes[l.inode] {
			out = append(out, l)
		}
	}
	return out
}
