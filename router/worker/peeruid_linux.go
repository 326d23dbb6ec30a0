package worker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ownProcess says whether the process at the other end of c, a connection accepted on the End's
// loopback listener, is this process or one of its children (llama-server, which Llamatray
// starts): c's remote address is the connecting socket's local address, and its row in
// /proc/net/tcp (or tcp6) gives the socket's inode, which that process holds open as an fd. A
// socket not found (it closed already) is refused.
func ownProcess(c net.Conn) (bool, error) {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return false, fmt.Errorf("not a TCP connection: %s", c.RemoteAddr())
	}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		uid, inode, found, err := socketUID(f, remote, local)
		if err != nil {
			return false, err
		}
		if !found {
			continue
		}
		if uid != os.Getuid() {
			return false, fmt.Errorf("a process of uid %d", uid)
		}
		return holdsSocket(inode)
	}
	return false, fmt.Errorf("no socket %s -> %s in /proc/net/tcp{,6}", remote, local)
}

// holdsSocket says whether this process or one of its children has the socket inode open.
func holdsSocket(inode string) (bool, error) {
	me := os.Getpid()
	pids := []int{me}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == me {
			continue
		}
		// /proc/PID/stat: "pid (comm) state ppid ...", comm may hold spaces and parentheses.
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		i := bytes.LastIndexByte(st, ')')
		if err != nil || i < 0 {
			continue
		}
		if f := strings.Fields(string(st[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(me) {
			pids = append(pids, pid)
		}
	}
	want := "socket:[" + inode + "]"
	for _, pid := range pids {
		dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			if l, _ := os.Readlink(filepath.Join(dir, fd.Name())); l == want {
				return true, nil
			}
		}
	}
	return false, fmt.Errorf("socket %s held by no process but this one and its children", inode)
}

// socketUID finds the socket whose local address is local and remote address is remote in
// file, a /proc/net/tcp table, and returns its uid and inode.
func socketUID(file string, local, remote *net.TCPAddr) (uid int, inode string, found bool, err error) {
	f, err := os.Open(file)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, "", false, nil // no IPv6
		}
		return 0, "", false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 {
			continue
		}
		if !procAddrIs(fs[1], local) || !procAddrIs(fs[2], remote) {
			continue
		}
		u, err := strconv.Atoi(fs[7])
		if err != nil {
			return 0, "", false, fmt.Errorf("%s: uid %q: %w", file, fs[7], err)
		}
		return u, fs[9], true, nil
	}
	return 0, "", false, sc.Err()
}

// procAddrIs says whether s, an address of /proc/net/tcp{,6} (the IP as 32-bit words in host
// byte order, in hex, a colon, the port in hex), is a.
func procAddrIs(s string, a *net.TCPAddr) bool {
	ipHex, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return false
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil || int(port) != a.Port {
		return false
	}
	raw, err := hex.DecodeString(ipHex)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	return ip.Equal(a.IP)
}
