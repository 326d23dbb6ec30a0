package child

import (
	"context"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
)

// Addr is where one child process listens: a unix socket (Linux, macOS), or a TCP port on 127.0.0.1
// (Windows). Exactly one of the fields is set.
type Addr struct {
	Socket string // path of the child's unix socket
	Port   int    // TCP port on 127.0.0.1
}

// URL returns the base URL of a child at a. For a socket the host names the socket file (unique in
// this process), so connection pools keep the connections of different children apart; the
// connection itself must be dialed with Dial.
func (a Addr) URL() *url.URL {
	if a.Socket != "" {
		return &url.URL{Scheme: "http", Host: filepath.Base(a.Socket)}
	}
	return &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port))}
}

// String is the address as llama-server prints it.
func (a Addr) String() string {
	if a.Socket != "" {
		return "unix://" + a.Socket
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port))
}

// hostArgs are the llama-server arguments that make it listen at a: llama-server takes a --host
// ending in ".sock" as a unix socket path (and then has no port).
func (a Addr) hostArgs() []string {
	if a.Socket != "" {
		return []string{"--host", a.Socket}
	}
	return []string{"--host", "127.0.0.1", "--port", strconv.Itoa(a.Port)}
}

// Dial connects to a child at a.
func (a Addr) Dial(ctx context.Context, d *net.Dialer) (net.Conn, error) {
	if a.Socket != "" {
		return d.DialContext(ctx, "unix", a.Socket)
	}
	return d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port)))
}

// Addrs hands out the addresses children listen on. An address handed out by Get is not handed out
// again; Put gives it back when its process has exited.
type Addrs interface {
	Get() (Addr, error)
	Put(Addr)
}
