package child

import (
	"fmt"
	"net"
	"sync"
)

// tcpPorts hands out 127.0.0.1 ports for children on Windows (elsewhere they listen on unix
// sockets, see Sockets). A port handed out by Get is not handed out again until it is given back
// with Put, so no two children race for one port.
type tcpPorts struct {
	mu    sync.Mutex // guards inUse
	inUse map[int]struct{}
}

func newTCPPorts() *tcpPorts { return &tcpPorts{inUse: make(map[int]struct{})} }

// maxPortTries bounds how often Get asks the OS for a port it has not handed out.
const maxPortTries = 50

// Get returns a port that was free a moment ago and is not held by another child.
func (a *tcpPorts) Get() (Addr, error) {
	for range maxPortTries {
		port, err := FreePort()
		if err != nil {
			return Addr{}, err
		}
		a.mu.Lock()
		_, held := a.inUse[port]
		if !held {
			a.inUse[port] = struct{}{}
		}
		a.mu.Unlock()
		if !held {
			return Addr{Port: port}, nil
		}
	}
	return Addr{}, fmt.Errorf("no free port: the OS offered only ports already given to children (%d tries)", maxPortTries)
}

// Put gives a port back. Putting a port that is not held is a no-op.
func (a *tcpPorts) Put(ad Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.inUse, ad.Port)
}

// FreePort binds 127.0.0.1:0, reads the port the OS chose and releases it.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	return port, nil
}
