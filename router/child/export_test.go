package child

import "net/url"

// Addr returns where the current process listens.
func (c *Child) Addr() Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addr
}

// Port returns the port the child listens on, on 127.0.0.1; 0 when it is on a unix socket.
func (c *Child) Port() int { return c.Addr().Port }

// Args returns the full argv of the current process, binary first.
func (c *Child) Args() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.args...)
}

// URL returns the child's base URL (see Addr.URL: a socket is dialed with Addr.Dial).
func (c *Child) URL() *url.URL { return c.Addr().URL() }
