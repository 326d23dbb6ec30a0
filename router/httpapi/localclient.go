package httpapi

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
)

// errPeerEditRemote refuses a peer change from another machine: a peer's URL is called by this
// instance and its answers are read back, so whoever may set one could make it reach any address
// it can (link-local, internal services). 403 peer_edit_forbidden.
var errPeerEditRemote = errors.New("peers can be changed only from this machine (a loopback client: `llamatray peer add`, the app, or the configuration file), never from another one, even with an API key")

// localClient says r came from this machine: from a loopback address, or from the very address
// it reached (a connection from the machine to one of its own addresses).
func localClient(r *http.Request) bool {
	remote, ok := addrOf(r.RemoteAddr)
	if !ok {
		return false
	}
	if remote.IsLoopback() {
		return true
	}
	la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if la == nil {
		return false
	}
	local, ok := addrOf(la.String())
	return ok && local == remote
}

// addrOf is the IP of "HOST:PORT", without its zone; false when it is not an IP address.
func addrOf(hostport string) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}
