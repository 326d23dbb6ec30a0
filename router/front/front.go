// Package front is the endpoint's HTTP/1.1 server. It reads each connection's requests itself and
// serves those whose head is plain HTTP/1.1 (head.go's strict subset: nearly every request a
// client sends) on the connection's own goroutine, with a goroutine per request for the handler:
// the connection's goroutine, once the body is read, waits for the next request, and that same read
// is what tells a request its client left. net/http's server spends more per request on the same
// work (a background read started and stopped per request, its bookkeeping); for a proxy on
// loopback that was a fifth of the router's CPU.
//
// Anything outside the subset (HTTP/1.0, a chunked or expected body, an upgrade, odd bytes, a head
// larger than the buffer) is handed, unread, with the rest of its connection, to a net/http server
// with the same handler and timeouts, which answers or refuses it as before.
package front

import (
	"cmp"
	"context"
	"errors"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Server.
type Options struct {
	Handler http.Handler
	// ReadHeaderTimeout bounds the arrival of a request's head, from its first byte (from the
	// connection's start for its first request); 0: none.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that waits that long for its next request; 0: none.
	IdleTimeout time.Duration
	// ErrorLog is net/http's error log for the connections handed to it.
	ErrorLog *log.Logger
	Logger   *slog.Logger
}

// bufferSize is each connection's read buffer: a head that does not fit is net/http's.
const bufferSize = 16 << 10

// Server serves HTTP/1.1 on listeners; its Serve, Shutdown and Close are http.Server's.
type Server struct {
	h        http.Handler
	o        Options
	log      *slog.Logger
	fallback *http.Server // serves the handed connections
	handed   *handoff
	startNet sync.Once

	shutting atomic.Bool
	active   sync.WaitGroup // connections being served here
	sweep    sweeper
	handedN  atomic.Int64 // connections handed to net/http (read by the tests)

	mu    sync.Mutex // guards conns and lns
	conns map[*conn]struct{}
	lns   map[net.Listener]struct{}
}

// New builds a Server.
func New(o Options) *Server {
	s := &Server{h: o.Handler, o: o, log: o.Logger, conns: map[*conn]struct{}{}, lns: map[net.Listener]struct{}{}}
	s.log = cmp.Or(s.log, slog.New(slog.DiscardHandler))
	s.fallback = &http.Server{Handler: o.Handler, ReadHeaderTimeout: o.ReadHeaderTimeout, IdleTimeout: o.IdleTimeout, ErrorLog: o.ErrorLog}
	s.handed = newHandoff()
	return s
}

// Serve accepts connections on ln until Shutdown or Close, which it answers with
// http.ErrServerClosed, or until ln fails.
func (s *Server) Serve(ln net.Listener) error {
	s.startNet.Do(func() { go func() { _ = s.fallback.Serve(s.handed) }() })
	s.mu.Lock()
	if s.shutting.Load() {
		s.mu.Unlock()
		_ = ln.Close()
		return http.ErrServerClosed
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.lns, ln)
		s.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.shutting.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() { // out of file descriptors and the like: as net/http
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "error", err, "in", backoff)
				time.Sleep(backoff) // a pause before trying again, not a wait for some state
				continue
			}
			return err
		}
		backoff = 0
		c := s.newConn(nc)
		if c == nil {
			continue
		}
		go c.serve()
	}
}

// newConn tracks nc; nil (nc closed) once the server is shutting down.
func (s *Server) newConn(nc net.Conn) *conn {
	c := newConn(s, nc)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutting.Load() {
		_ = nc.Close()
		return nil
	}
	s.conns[c] = struct{}{}
	s.active.Add(1)
	return c
}

// forget stops tracking c: it was closed or handed to net/http.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.active.Done()
}

// closing reports whether the server is shutting down (answers end their connections).
func (s *Server) closing() bool { return s.shutting.Load() }

// Shutdown stops accepting, closes idle connections, and waits until the others have answered
// (each closes after its answer) and net/http's have too, or until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stop()
	netDone := make(chan error, 1)
	go func() { netDone <- s.fallback.Shutdown(ctx) }()
	ours := make(chan struct{})
	go func() { s.active.Wait(); close(ours) }()
	select {
	case <-ours:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-netDone
}

// Close closes every listener and connection at once.
func (s *Server) Close() error {
	s.stop()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.nc.Close()
	}
	s.mu.Unlock()
	return s.fallback.Close()
}

// stop marks the server as shutting down, closes its listeners and wakes its idle connections,
// which close.
func (s *Server) stop() {
	s.mu.Lock()
	s.shutting.Store(true)
	for ln := range s.lns {
		_ = ln.Close()
	}
	for c := range s.conns {
		c.wakeIfIdle()
	}
	s.mu.Unlock()
	_ = s.handed.Close()
}

// handoff is the listener of net/http's server: the connections the front hands to it.
type handoff struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newHandoff() *handoff { return &handoff{ch: make(chan net.Conn), done: make(chan struct{})} }

func (l *handoff) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// give hands c to net/http's server; false (c closed) when it no longer accepts.
func (l *handoff) give(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		_ = c.Close()
		return false
	}
}

func (l *handoff) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoff) Addr() net.Addr { return handoffAddr{} }

type handoffAddr struct{}

func (handoffAddr) Network() string { return "front" }
func (handoffAddr) String() string  { return "front" }

// handedConn is a connection handed to net/http with the bytes the front read of it but did not
// consume: they are read first.
type handedConn struct {
	net.Conn
	prefix []byte
}

func (c *handedConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite lets net/http half-close a TCP connection before it closes it, as it does its own.
func (c *handedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

var _ net.Conn = (*handedConn)(nil)

// watchAfter is how long a request runs, its body read, before its connection is read meanwhile
// for the client's leaving; a client that leaves is noticed within about twice that. Most answers of
// a proxy on loopback take less, and those never cost a second goroutine and read.
const watchAfter = 10 * time.Millisecond

// sweeper starts watchClient for the requests that have run watchAfter. One timer, armed while
// requests are listed, fires watchAfter after the first of them was listed and every watchAfter
// while any is; a request that ends first takes itself off the list, and the last one off stops
// the timer. So answers that all take less than watchAfter never wake it.
type sweeper struct {
	mu     sync.Mutex // guards listed, timer and armed
	listed map[*conn]time.Time
	timer  *time.Timer // runs sweep; made by the first add
	armed  bool        // timer is set to fire
}

// add lists c's request (its body was read); the timer is armed if it is not.
func (s *sweeper) add(c *conn) {
	c.watch.Store(watchListed)
	now := time.Now()
	s.mu.Lock()
	if s.listed == nil {
		s.listed = map[*conn]time.Time{}
	}
	s.listed[c] = now
	if !s.armed {
		s.armed = true
		if s.timer == nil {
			s.timer = time.AfterFunc(watchAfter, s.sweep)
		} else {
			s.timer.Reset(watchAfter)
		}
	}
	s.mu.Unlock()
}

// remove takes c's request off the list (it ended before a watchClient started).
func (s *sweeper) remove(c *conn) {
	s.mu.Lock()
	delete(s.listed, c)
	if len(s.listed) == 0 && s.armed {
		s.armed = false
		s.timer.Stop()
	}
	s.mu.Unlock()
}

// sweep starts watchClient for every request due and arms the timer for the next one.
func (s *sweeper) sweep() {
	now := time.Now()
	var due []*conn
	s.mu.Lock()
	for c, since := range s.listed {
		if now.Sub(since) >= watchAfter {
			delete(s.listed, c)
			due = append(due, c)
		}
	}
	// Again in watchAfter, not at the next request's own due time: under steady load the sweeps
	// stay one per watchAfter, and a request is watched after watchAfter to twice that.
	s.armed = len(s.listed) > 0
	if s.armed {
		s.timer.Reset(watchAfter)
	}
	s.mu.Unlock()
	for _, c := range due {
		if c.watch.CompareAndSwap(watchListed, watchReading) {
			go c.watchClient()
		}
	}
}
