package child

// Windows children listen on loopback TCP ports: llama-server's unix sockets are not available there.
var defaultAddrs = newTCPPorts()

// NewAddrs returns the addresses children of one engine listen on: on Windows, 127.0.0.1 ports.
func NewAddrs() Addrs { return newTCPPorts() }

// CloseAddrs releases what a (from NewAddrs) holds; ports need nothing.
func CloseAddrs(a Addrs) error { return nil }
