package worker

import (
	"errors"
	"net"
	"testing"
	"time"
)

// shortHandshakes gives connections handshakeTimeout d for one test that waits for the worker
// to close silent ones. The other tests keep the real 10 s: on a loaded machine (and under Wine) a
// head's own TLS handshake and request line can take longer than a short deadline.
func shortHandshakes(t *testing.T, d time.Duration) {
	old := handshakeTimeout
	handshakeTimeout = d
	t.Cleanup(func() { handshakeTimeout = old })
}

func dialFrom(t *testing.T, ip net.IP, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestSilentHostsDoNotLockHeadsOut: 8 hosts with 8 silent connections each fill maxHandshakes;
// a head's handshake still gets through, the oldest silent connection giving way.
func TestSilentHostsDoNotLockHeadsOut(t *testing.T) {
	w := startWorker(t)
	var conns []net.Conn
	for h := 2; h < 2+maxHandshakes/maxHandshakesPerHost; h++ {
		for range maxHandshakesPerHost {
			conns = append(conns, dialFrom(t, net.IPv4(127, 0, 0, byte(h)), w.addr))
		}
	}
	if _, err := Check(ctxT(t, 5*time.Second), w.addr, testToken); err != nil {
		t.Fatalf("a head's Check while %d silent connections are open: %v", len(conns), err)
	}
	waitEOF(t, conns[0], 5*time.Second) // the oldest was closed for it
}

// TestRefusedForCapacityIsUnreachable: a head refused because its host has maxHandshakesPerHost
// handshakes in progress hears ErrUnreachable (try again), not ErrNotWorker.
func TestRefusedForCapacityIsUnreachable(t *testing.T) {
	w := startWorker(t)
	ip := net.IPv4(127, 0, 0, 2)
	for range maxHandshakesPerHost {
		dialFrom(t, ip, w.addr)
	}
	_, err := handshake(ctxT(t, 5*time.Second), dialFrom(t, ip, w.addr), testToken, opStatus, "h")
	if !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrNotWorker) {
		t.Fatalf("handshake over the per-host limit: %v, want ErrUnreachable", err)
	}
}

func TestHostKey(t *testing.T) {
	for _, c := range []struct{ ip, want string }{
		{"192.168.1.20", "192.168.1.20"},
		{"::ffff:10.0.0.1", "10.0.0.1"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:bbbb:cccc:dddd:eeee", "2001:db8:1:2::/64"},
		{"2001:db8:1:3::1", "2001:db8:1:3::/64"},
	} {
		if got := hostKey(&net.TCPAddr{IP: net.ParseIP(c.ip), Port: 1}); got != c.want {
			t.Errorf("hostKey(%s) = %q, want %q", c.ip, got, c.want)
		}
	}
}
