package worker

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// sameUser says whether the process at the other end of c, a connection accepted on the End's
// loopback listener, runs as this process's user. c's remote address is the connecting socket's
// local address: its row in /proc/net/tcp (or tcp6), whose remote address is c's local address,
// gives the socket's owner uid. A socket not found there (it closed already) is refused.
func sameUser(c net.Conn) (bool, error) {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return false, fmt.Errorf("not a TCP connection: %s", c.RemoteAddr())
	}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		uid, found, err := socketUID(f, remote, local)
		if err != nil {
			return false, err
		}
		if found {
			return uid == os.Getuid(), nil
		}
	}
	return false, fmt.Errorf("no socket %s -> %s in /proc/net/tcp{,6}", remote, local)
}

// socketUID finds the socket whose local address is local and remote address is remote in
// file, a /proc/net/tcp table, and returns its uid.
func socketUID(file string, local, remote *net.TCPAddr) (uid int, found bool, err error) {
	f, err := os.Open(file)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, false, nil // no IPv6
		}
		return 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 {
			continue
		}
		if !procAddrIs(fs[1], local) || !procAddrIs(fs[2], remote) {
			continue
		}
		u, err := strconv.Atoi(fs[7])
		if err != nil {
			return 0, false, fmt.Errorf("%s: uid %q: %w", file, fs[7], err)
		}
		return u, true, nil
	}
	return 0, false, sc.Err()
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
