package front

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llamatray/llamatray/router/internal/rawio"
)

// aLongTimeAgo is a read deadline that has passed: it wakes a read in progress.
var aLongTimeAgo = time.Unix(1, 0)

// lingerFor and lingerMax bound how long and how much of a client's unread input is read and
// dropped before its connection closes: closing with input unread resets the connection, and a reset
// can make the client lose the answer it was sent.
const (
	lingerFor = 500 * time.Millisecond
	lingerMax = 256 << 10
)

// conn is one client connection. Its goroutine (serve) reads the requests and runs their handlers.
// A request still running when the sweeper (front.go) looks, with its body read, gets a goroutine
// that reads the connection meanwhile (watchClient): the next request's first byte, or the client's
// leaving, which cancels the request's context. Requests that end sooner never need it.
type conn struct {
	s      *Server
	nc     net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	ctx    context.Context // the connection's: net/http's ServerContextKey and LocalAddrContextKey
	remote string

	// mu guards idle, deadline and owned, and the connection's read deadline as they change (a wake
	// in stop is never overwritten).
	mu   sync.Mutex
	idle bool // waiting for a head, with no request in flight: Shutdown closes it
	// deadline is the read deadline as last set (zero: none). An idle or head deadline stays on
	// through the request after it until something reads the connection (forRead): most requests
	// never do past their buffered head and body, and skip the two changes.
	deadline time.Time
	owned    bool // the handler set the read deadline itself: it stays as set

	// watch is the request's state for the sweeper: watchNone, watchListed (its body was read
	// and it is in the sweeper's list) or watchReading (a watchClient runs; its result comes on
	// watched). cancel is the request's, set before it is listed.
	watch   atomic.Int32
	cancel  context.CancelCauseFunc
	watched chan error
}

const (
	watchNone int32 = iota
	watchListed
	watchReading
)

func newConn(s *Server, nc net.Conn) *conn {
	nc = rawio.Wrap(nc)
	ctx := context.WithValue(context.Background(), http.ServerContextKey, s.fallback)
	ctx = context.WithValue(ctx, http.LocalAddrContextKey, nc.LocalAddr())
	return &conn{s: s, nc: nc, br: bufio.NewReaderSize(nc, bufferSize), bw: bufio.NewWriterSize(nc, 4<<10),
		ctx: ctx, remote: nc.RemoteAddr().String(), watched: make(chan error, 1)}
}

// wake ends a read in progress on the connection; c.mu is held.
func (c *conn) wake() { c.setDeadline(aLongTimeAgo) }

// setDeadline sets the connection's read deadline unless it is set to d already; c.mu is held.
func (c *conn) setDeadline(d time.Time) {
	if !d.Equal(c.deadline) {
		_ = c.nc.SetReadDeadline(d)
		c.deadline = d
	}
}

// idleSlack is how much later than due an idle connection's deadline may fall: one already set
// within it is kept, so a connection that carries request after request sets its idle deadline
// about once per idleSlack instead of once per request.
func idleSlack(idle time.Duration) time.Duration { return min(time.Second, idle/16) }

// setIdle marks the connection as waiting for a head, until the read deadline d (zero: none), or
// up to slack after it when one is already set there. It reports false when the server is shutting
// down: the connection closes. stop wakes idle connections under the same lock, so its wake is
// never overwritten by d.
func (c *conn) setIdle(d time.Time, slack time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle = true
	if c.s.closing() {
		return false
	}
	switch {
	case d.IsZero():
		c.setDeadline(d)
	case c.deadline.Before(d) || c.deadline.After(d.Add(slack)):
		c.setDeadline(d.Add(slack))
	}
	return true
}

// setBusy marks a request in flight, its head read. The idle or head deadline is left on until
// forRead. false: the server is shutting down, and the connection closes with its request
// unserved, as net/http closes a connection still reading its head.
func (c *conn) setBusy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s.closing() {
		return false
	}
	c.idle, c.owned = false, false
	return true
}

// forRead readies the connection for a read while its request runs (the body past the buffer, or
// watchClient): the idle or head deadline left from before the request comes off, and one the
// handler set stays.
func (c *conn) forRead() {
	c.mu.Lock()
	if !c.owned {
		c.setDeadline(time.Time{})
	}
	c.mu.Unlock()
}

// setReadDeadline is the handler's (http.ResponseController): it stays until the request ends.
func (c *conn) setReadDeadline(d time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.owned = true
	c.deadline = d
	return c.nc.SetReadDeadline(d)
}

// wakeIfIdle wakes the connection if it waits for a head (stop).
func (c *conn) wakeIfIdle() {
	c.mu.Lock()
	if c.idle {
		c.wake()
	}
	c.mu.Unlock()
}

// headDeadline is the read deadline of a head whose first byte is here (zero: none).
func (c *conn) headDeadline() time.Time {
	if d := c.s.o.ReadHeaderTimeout; d > 0 {
		return time.Now().Add(d)
	}
	return time.Time{}
}

// closing reports whether the answer being written is the connection's last.
func (c *conn) closing() bool { return c.s.closing() }

// serve reads and serves the connection's requests until it closes or is handed to net/http.
func (c *conn) serve() {
	handed := false
	defer func() {
		if !handed {
			_ = c.nc.Close()
		}
		c.s.forget(c)
	}()
	// The first head's deadline runs from the connection's start, the next ones' from their first
	// byte, unless the whole head came with it.
	if !c.setIdle(c.headDeadline(), 0) {
		return
	}
	if _, err := c.br.Peek(1); err != nil {
		return
	}
	lastPOST := false
	for first := true; ; first = false {
		if lastPOST {
			// RFC 9112 section 2.2: a server may ignore a CRLF or two after a POST's body (old clients).
			if b, _ := c.br.Peek(min(c.br.Buffered(), 4)); len(b) > 0 {
				n := 0
				for n < len(b) && (b[n] == '\r' || b[n] == '\n') {
					n++
				}
				_, _ = c.br.Discard(n)
			}
		}
		if !first && !c.headBuffered() && !c.setIdle(c.headDeadline(), 0) {
			return
		}
		h, ok, err := c.readHead()
		if err != nil {
			return
		}
		if !ok {
			handed = c.handOff()
			return
		}
		if !c.setBusy() {
			return
		}
		lastPOST = h.method == http.MethodPost
		if !c.serveOne(h) {
			return
		}
	}
}

// headBuffered reports whether the buffer holds a whole head: reading it cannot wait on the client.
func (c *conn) headBuffered() bool {
	b, _ := c.br.Peek(c.br.Buffered())
	return headEnd(b, 0)
}

// readHead peeks until the buffer holds a whole head and parses it; ok is false for a head the front
// leaves to net/http (outside the subset, or larger than the buffer). Nothing is consumed. Each
// byte is looked at once for the head's end, however slowly the head arrives.
func (c *conn) readHead() (h head, ok bool, err error) {
	scanned := 0
	for {
		n := max(c.br.Buffered(), 1)
		b, err := c.br.Peek(n)
		if err != nil {
			return h, false, err // the client left, or its head is late: closed, as net/http does
		}
		if headEnd(b, max(scanned-2, 0)) {
			h, ok := parseHead(b)
			return h, ok, nil
		}
		scanned = len(b)
		if n == c.br.Size() {
			return h, false, nil
		}
		if _, err := c.br.Peek(n + 1); err != nil {
			return h, false, err
		}
	}
}

// headEnd reports whether b holds a head's end (a blank line, also with bare LFs) that ends past
// from.
func headEnd(b []byte, from int) bool {
	for i := from; i+1 < len(b); i++ {
		if b[i] == '\n' && (b[i+1] == '\n' || i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n') {
			return true
		}
	}
	return false
}

// handOff gives the connection, with what was read of it, to net/http's server.
func (c *conn) handOff() bool {
	b, _ := c.br.Peek(c.br.Buffered())
	hc := &handedConn{Conn: c.nc, prefix: append([]byte(nil), b...)}
	c.s.handedN.Add(1)
	c.s.log.Debug("connection handed to net/http", "remote", c.remote)
	return c.s.handed.give(hc)
}

// serveOne serves the request of head h, whose body follows in the buffer. It reports whether the
// connection goes on, with the next request's first byte already buffered.
func (c *conn) serveOne(h head) bool {
	_, _ = c.br.Discard(h.headerSize)
	ctx, cancel := context.WithCancelCause(c.ctx)
	defer cancel(nil)
	c.cancel = cancel
	w := &writer{c: c, bw: c.bw, header: make(http.Header, 8)}
	var body *reqBody
	// base stays on the stack: WithContext makes the one Request on the heap.
	base := http.Request{Method: h.method, URL: h.url, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h.header, Body: http.NoBody, ContentLength: h.length, Close: h.close, Host: h.host,
		RemoteAddr: c.remote, RequestURI: h.target}
	if h.length > 0 {
		body = &w.bodyOf
		body.c, body.left = c, h.length
		base.Body = body
	}
	req := base.WithContext(ctx)
	w.req, w.body = req, body
	if body == nil {
		c.s.sweep.add(c)
	}
	keep := c.handle(w, req, body)
	watched := c.watch.Swap(watchNone) == watchReading
	if !watched {
		c.s.sweep.remove(c)
	}
	if !keep { // (also when the handler left its body unread: no next request can be found)
		if !watched { // (a watchClient is reading the connection, and sees its close)
			c.linger() // input left unread would reset the connection and could lose the answer
		}
		return false
	}
	idleUntil := time.Time{}
	if d := c.s.o.IdleTimeout; d > 0 {
		idleUntil = time.Now().Add(d)
	}
	if !c.setIdle(idleUntil, idleSlack(c.s.o.IdleTimeout)) {
		return false
	}
	var err error
	if watched {
		err = <-c.watched // watchClient's read is the wait for the next request
	} else {
		_, err = c.br.Peek(1)
	}
	return err == nil
}

// errClientGone is the cause of a request's context when its client closed the connection.
var errClientGone = errors.New("the client closed the connection")

// watchClient reads the connection while its request runs (the sweeper starts it): the next
// request's first byte, or an error, which ends the request when the client left.
func (c *conn) watchClient() {
	c.forRead()
	_, err := c.br.Peek(1)
	if err != nil {
		c.cancel(fmt.Errorf("%w: %w", errClientGone, err))
	}
	c.watched <- err
}

// linger half-closes the connection and reads what the client still sends, within bounds, as
// net/http does before it closes a connection it answered.
func (c *conn) linger() {
	_ = c.bw.Flush()
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	c.mu.Lock()
	c.setDeadline(time.Now().Add(lingerFor))
	c.mu.Unlock()
	_, _ = io.CopyN(io.Discard, c.br, lingerMax)
}

// handle runs the handler on req and ends its answer; it reports whether the connection can carry
// another request. An answer aborted with http.ErrAbortHandler, or a handler's panic, closes the
// connection at once, as net/http does.
func (c *conn) handle(w *writer, req *http.Request, body *reqBody) (keep bool) {
	defer func() {
		abort := false
		if p := recover(); p != nil {
			abort = true
			if p != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				c.s.log.Error("panic serving a request", "remote", c.remote, "path", req.URL.Path, "panic", fmt.Sprint(p), "stack", string(buf))
			}
		}
		if body != nil {
			body.end()
		}
		if abort {
			w.done = true
			_ = c.nc.Close()
			keep = false
			return
		}
		keep = w.finish() && (body == nil || body.read())
	}()
	c.s.h.ServeHTTP(w, req)
	return false
}

// reqBody is a request's body of known length, read from the connection's buffer.
type reqBody struct {
	c *conn

	mu     sync.Mutex // guards left and ended; only the handler's goroutine reads, the lock fences a late read after it returned
	left   int64
	ended  bool
	closed bool
}

func (b *reqBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended || b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	if b.c.br.Buffered() == 0 {
		b.c.forRead()
	}
	n, err := b.c.br.Read(p)
	b.left -= int64(n)
	if b.left == 0 {
		b.c.s.sweep.add(b.c) // the connection may be read for the next request from here on
		return n, nil
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// Buffered reports whether the rest of the body is already in the connection's buffer: reading it
// cannot wait on the client, and needs no deadline (httpapi's bodyDeadline).
func (b *reqBody) Buffered() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return int64(b.c.br.Buffered()) >= b.left
}

// Close stops the handler's reads; what is left of the body is serve's to drop.
func (b *reqBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

// end is called as the handler returns: no read may follow.
func (b *reqBody) end() {
	b.mu.Lock()
	b.ended = true
	b.mu.Unlock()
}

// read reports whether the body was read to its end.
func (b *reqBody) read() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left == 0
}
