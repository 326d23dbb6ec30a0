package worker

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/internal/backoff"
)

// The worker's side of accepting links: each connection tracked (closed at Serve's end) and
// admitted to its handshake within the bounds per host and in all (maxHandshakesPerHost,
// maxHandshakes), the oldest handshake given up first.

// accept takes link connections on ln until it is closed (Serve's end), each handled on a
// goroutine of its own, and waits for those.
func (s *server) accept(ln net.Listener) error {
	var retry time.Duration // backoff after an accept error (out of file descriptors, say)
	for {
		c, err := ln.Accept()
		if err != nil && s.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
			retry = backoff.Next(retry, 5*time.Millisecond, time.Second)
			s.log.Warn("worker: accept failed; retrying", "err", err, "in", retry)
			select {
			case <-time.After(retry):
			case <-s.ctx.Done():
			}
			continue
		}
		if err != nil {
			s.wg.Wait()
			if s.ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("worker: accept: %w", err)
		}
		retry = 0
		s.take(c)
	}
}

// take admits c to its handshake, handled on a goroutine of its own; a connection past the bounds
// on handshakes is closed (or closes the oldest).
func (s *server) take(c net.Conn) {
	if s.ctx.Err() != nil || !s.conns.add(c) { // ending: no new handshake, even before closeAll
		c.Close()
		return
	}
	// Admitted here, in the order of arrival: the oldest handshake is the one to give up.
	hs, evicted, ok := s.admit(c)
	if !ok {
		s.log.Warn("link refused: too many handshakes at once from one host", "from", c.RemoteAddr().String())
		s.conns.remove(c)
		c.Close()
		return
	}
	if evicted != nil {
		s.log.Warn("link: too many handshakes at once; the oldest is closed", "closed", evicted.RemoteAddr().String())
		evicted.Close()
	}
	s.wg.Go(func() { s.handle(c, hs) })
}

// connSet holds the connections a listener accepted (and the links dialed for them), to be closed
// together at its end.
type connSet struct {
	mu     sync.Mutex // guards m and closed
	m      map[net.Conn]struct{}
	closed bool
}

// add registers c to be closed by closeAll; false once closeAll ran.
func (cs *connSet) add(c net.Conn) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return false
	}
	if cs.m == nil {
		cs.m = map[net.Conn]struct{}{}
	}
	cs.m[c] = struct{}{}
	return true
}

func (cs *connSet) remove(c net.Conn) {
	cs.mu.Lock()
	delete(cs.m, c)
	cs.mu.Unlock()
}

func (cs *connSet) isClosed() bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.closed
}

// shut refuses the connections added from now on and returns those added, to be closed.
func (cs *connSet) shut() []net.Conn {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.closed = true
	return slices.Collect(maps.Keys(cs.m))
}

// closeAll shuts cs and closes every connection added.
func (cs *connSet) closeAll() {
	for _, c := range cs.shut() {
		c.Close()
	}
}

// admit counts a handshake of c; false when its host has maxHandshakesPerHost in progress. When
// the worker has maxHandshakes in progress the oldest is given up (returned, to be closed): a
// head's handshake takes milliseconds, so the oldest is one that says nothing.
func (s *server) admit(c net.Conn) (hs *handshaking, evicted net.Conn, ok bool) {
	hs = &handshaking{c: c, host: hostKey(c.RemoteAddr())}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending[hs.host] >= maxHandshakesPerHost {
		return nil, nil, false
	}
	if len(s.queue) >= maxHandshakes {
		old := s.queue[0]
		s.dropLocked(old)
		evicted = old.c
	}
	s.queue = append(s.queue, hs)
	s.pending[hs.host]++
	return hs, evicted, true
}

// unadmit ends hs's handshake (a no-op when admit gave it up already).
func (s *server) unadmit(hs *handshaking) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(hs)
}

func (s *server) dropLocked(hs *handshaking) {
	i := slices.Index(s.queue, hs)
	if i < 0 {
		return
	}
	s.queue = slices.Delete(s.queue, i, i+1)
	if s.pending[hs.host]--; s.pending[hs.host] <= 0 {
		delete(s.pending, hs.host)
	}
}

// hostKey is the host a connection from a counts against: its IPv4 address, or the /64 of its
// IPv6 one (a single machine commonly holds a whole /64).
func hostKey(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if v4 := ta.IP.To4(); v4 != nil {
		return v4.String()
	}
	return ta.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
