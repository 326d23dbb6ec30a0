// Package proxy is the transport of the requests the router proxies to its llama-server children:
// an HTTP/1.1 client and connection pool (Transport), its reading and writing of the wire, the
// headers a proxied request and its answer keep (OutRequest, RemoveHopByHop), the copy of an
// answer (Copy), and the repair of a stream's opening (Repair). The router's handlers decide where a
// request goes; this package carries it there and back.
package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/internal/rawio"
)

// IdleTimeout keeps idle connections to children shorter than llama-server's own keep-alive
// timeout (5 s), so the router rarely reuses a connection the child is about to close.
const IdleTimeout = 3 * time.Second

// Transport is the round tripper of every proxied request: HTTP/1.1 to one llama-server child on its
// unix socket (Linux, macOS) or loopback port (Windows), one request at a time per connection.
//
// It does on the request's own goroutine what net/http's Transport hands to two more per connection
// (a writer and a reader, with channels between them): the request goes out in one write, the answer
// is read from the same goroutine that copies it to the client. For a proxy on loopback in front of a
// child that answers in a millisecond, those hand-offs and their wake-ups were a third of the router's
// CPU per request. A connection whose answer was read to its end goes back to a small pool; a
// stream's connection (llama-server closes it) and any connection left half-read are closed.
//
// A request that fails on a kept-alive connection before any byte of an answer came back (the child
// closed it under our feet) is sent again once on a new connection, its body replayed from GetBody.
type Transport struct {
	dest    func(ctx context.Context) (model, socket string) // where a request goes (NewTransport)
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle int           // idle connections kept per child
	idleFor time.Duration // an idle connection older than this is closed, not reused

	mu    sync.Mutex          // guards idle and timer
	idle  map[connKey][]*conn // by child, most recent last; a list emptied by get stays, for the next put
	timer *time.Timer         // closes stale idle connections; armed while any is idle
}

// connKey is where a child listens: "unix" and its socket path, or "tcp" and host:port.
type connKey struct{ network, addr string }

// conn is one connection to a child with its buffers.
type conn struct {
	net.Conn
	key   connKey
	model string // the model whose child it reaches (canonical ID)
	br    *bufio.Reader
	bw    *bufio.Writer
	since time.Time // idle since
}

// NewTransport returns a Transport that asks dest, when set, which model's child a request goes to
// and on which unix socket ("": the request URL's host, over TCP).
func NewTransport(dest func(ctx context.Context) (model, socket string)) *Transport {
	// No TCP keep-alive probes: a child on loopback that goes away is seen by its supervisor.
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: -1}
	return &Transport{dest: dest, dial: d.DialContext, maxIdle: 16, idleFor: IdleTimeout, idle: map[connKey][]*conn{}}
}

// errUpstreamClosed says the child closed a kept-alive connection before it answered.
var errUpstreamClosed = errors.New("llama-server closed the connection before answering")

func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	network, addr, model := "tcp", req.URL.Host, ""
	if t.dest != nil {
		var socket string
		if model, socket = t.dest(ctx); socket != "" {
			network, addr = "unix", socket
		}
	}
	c, reused, err := t.get(ctx, network, addr, model)
	if err != nil {
		return nil, err
	}
	resp, err := t.exchange(ctx, c, req)
	if err == nil || !reused || ctx.Err() != nil || !errors.Is(err, errUpstreamClosed) {
		return resp, err
	}
	if req.Body != nil && req.Body != http.NoBody {
		getBody := req.GetBody
		if m, ok := req.Body.(*Body); ok {
			getBody = m.replay
		}
		if getBody == nil {
			return nil, err
		}
		body, gerr := getBody()
		if gerr != nil {
			return nil, err
		}
		req = req.Clone(ctx)
		req.Body = body
	}
	c, err2 := t.dialConn(ctx, network, addr, model)
	if err2 != nil {
		return nil, fmt.Errorf("%w (retried after: %v)", err2, err)
	}
	resp, err2 = t.exchange(ctx, c, req)
	if err2 != nil {
		return nil, fmt.Errorf("%w (retried after: %v)", err2, err)
	}
	return resp, nil
}

// exchange writes req on c and reads the answer's head. The body returned reads from c; closing it
// gives c back to the pool when the answer was read to its end and both sides keep the connection.
func (t *Transport) exchange(ctx context.Context, c *conn, req *http.Request) (*http.Response, error) {
	// A cancelled request (the client left) closes the connection, which ends a read or write in
	// progress on it; once the answer is read the hook is taken off again.
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	fail := func(err error) (*http.Response, error) {
		stop()
		_ = c.Close()
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("%w: %w", cerr, err)
		}
		return nil, err
	}
	if err := writeRequest(c.bw, req); err != nil {
		return fail(err)
	}
	if err := c.bw.Flush(); err != nil {
		return fail(fmt.Errorf("%w: %w", errUpstreamClosed, err))
	}
	if _, err := c.br.Peek(1); err != nil {
		return fail(fmt.Errorf("%w: %w", errUpstreamClosed, err))
	}
	var resp *http.Response
	for {
		var err error
		resp, err = readAnswer(c.br, req)
		if err != nil {
			return fail(fmt.Errorf("reading llama-server's answer: %w", err))
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		// 1xx informational answers come before the real one.
	}
	keep := !resp.Close && !req.Close
	if resp.Body == http.NoBody || resp.Body == nil {
		resp.Body = http.NoBody
		t.done(c, stop, keep)
		return resp, nil
	}
	resp.Body = &answerBody{rc: resp.Body, t: t, c: c, stop: stop, keep: keep}
	return resp, nil
}

// done ends one exchange on c: back to the pool when keep and the cancel hook had not fired, else closed.
func (t *Transport) done(c *conn, stop func() bool, keep bool) {
	if stop() && keep {
		t.put(c)
		return
	}
	_ = c.Close()
}

// answerBody is an answer's body; it knows whether it was read to its end.
type answerBody struct {
	rc     io.ReadCloser
	t      *Transport
	c      *conn
	stop   func() bool
	keep   bool
	eof    bool
	closed bool
}

func (b *answerBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, net.ErrClosed
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *answerBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	b.t.done(b.c, b.stop, b.keep && b.eof)
	return nil
}

// get returns an idle connection to addr, or a new one to model's child there; reused says which.
func (t *Transport) get(ctx context.Context, network, addr, model string) (*conn, bool, error) {
	key := connKey{network, addr}
	now := time.Now()
	var stale []*conn
	var c *conn
	t.mu.Lock()
	for list := t.idle[key]; len(list) > 0; list = t.idle[key] {
		last := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[key] = list[:len(list)-1]
		if now.Sub(last.since) < t.idleFor {
			c = last
			break
		}
		stale = append(stale, last)
	}
	t.mu.Unlock()
	for _, s := range stale {
		_ = s.Close()
	}
	if c != nil {
		return c, true, nil
	}
	c, err := t.dialConn(ctx, network, addr, model)
	return c, false, err
}

// dialConn connects to model's child at addr.
func (t *Transport) dialConn(ctx context.Context, network, addr, model string) (*conn, error) {
	nc, err := t.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	nc = rawio.Wrap(nc)
	// Buffers are per connection and, with a new connection per stream, per request: small ones.
	// Larger bodies go straight from the proxy's 32 KiB copy buffer.
	return &conn{Conn: nc, key: connKey{network, addr}, model: model, br: bufio.NewReaderSize(nc, 8<<10), bw: bufio.NewWriterSize(nc, 8<<10)}, nil
}

// put keeps c for the next request to its child.
func (t *Transport) put(c *conn) {
	c.since = time.Now()
	t.mu.Lock()
	list := t.idle[c.key]
	if len(list) >= t.maxIdle {
		t.mu.Unlock()
		_ = c.Close()
		return
	}
	t.idle[c.key] = append(list, c)
	if t.timer == nil {
		t.timer = time.AfterFunc(t.idleFor, t.prune)
	}
	t.mu.Unlock()
}

// prune closes the idle connections that are too old to reuse: a child that stopped, or traffic
// that ended, leaves none open for long. It re-arms itself while any connection is idle.
func (t *Transport) prune() {
	now := time.Now()
	t.drop(func(c *conn) bool { return now.Sub(c.since) >= t.idleFor }, func(oldest time.Time, any bool) {
		t.timer = nil
		if any {
			t.timer = time.AfterFunc(oldest.Add(t.idleFor).Sub(now), t.prune)
		}
	})
}

// CloseIdle closes the idle connections to model's children: its child is about to stop, and
// llama-server waits for open connections before it exits.
func (t *Transport) CloseIdle(model string) {
	t.drop(func(c *conn) bool { return c.model == model }, nil)
}

// drop closes the idle connections gone picks. then, when set, runs under mu with the oldest idle
// time of those kept and whether any is kept.
func (t *Transport) drop(gone func(*conn) bool, then func(oldest time.Time, any bool)) {
	var closing []*conn
	t.mu.Lock()
	oldest := time.Now()
	for key, list := range t.idle {
		kept := list[:0]
		for _, c := range list {
			if gone(c) {
				closing = append(closing, c)
				continue
			}
			kept = append(kept, c)
			if c.since.Before(oldest) {
				oldest = c.since
			}
		}
		clear(list[len(kept):])
		if len(kept) == 0 {
			delete(t.idle, key)
		} else {
			t.idle[key] = kept
		}
	}
	if then != nil {
		then(oldest, len(t.idle) > 0)
	}
	t.mu.Unlock()
	for _, c := range closing {
		_ = c.Close()
	}
}

// CloseIdleConnections closes every idle connection (the server is stopping).
func (t *Transport) CloseIdleConnections() {
	t.drop(func(*conn) bool { return true }, func(time.Time, bool) {
		if t.timer != nil {
			t.timer.Stop()
			t.timer = nil
		}
	})
}

// Body is a proxied request's body, held in memory: it reads as a bytes.Reader (io.Copy writes it in
// one piece) and replays from its start for a resend. A caller keeps it inside its own per-request
// state, so a proxied body costs no allocation of its own.
type Body struct {
	b []byte
	bytes.Reader
}

// Close does nothing: the bytes are the caller's.
func (m *Body) Close() error { return nil }

// replay is a new reader of the whole body (http.Request.GetBody's contract).
func (m *Body) replay() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(m.b)), nil }

// SetBody makes body r's, through m: Body, ContentLength, no transfer coding. GetBody is set when
// the request goes to a transport that resends with it (net/http's, for peers): a Transport replays
// a Body itself.
func SetBody(r *http.Request, m *Body, body []byte, getBody bool) {
	r.ContentLength, r.TransferEncoding, r.GetBody = int64(len(body)), nil, nil
	if len(body) == 0 {
		r.Body = http.NoBody
		return
	}
	m.b = body
	m.Reset(body)
	r.Body = m
	if getBody {
		r.GetBody = m.replay
	}
}
