package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llamatray/llamatray/router/internal/ggmlrpc"
)

// dialTimeout bounds a link's dial and handshake when llama-server opens a connection to an End.
const dialTimeout = 10 * time.Second

// End is the head's local end of the links to one worker: a loopback listener whose address is
// what llama-server's --rpc gets. Each connection accepted there from llama-server (see
// ownProcess) is carried over a new authenticated link to the worker, spliced both ways.
type End struct {
	name, address, token string
	log                  *slog.Logger
	ln                   net.Listener
	lost                 chan error
	sent, received       atomic.Int64
	carrying             atomic.Int32 // links open now
	wg                   sync.WaitGroup
	conns                connSet // the local connections and their links
}

// Open checks the worker at address (Check, bounded by ctx; its error is returned, naming the
// worker) and listens on 127.0.0.1:0 for llama-server. A busy worker is not an error here: the
// head reads Check's Info itself if it cares. The End lives until Close; ctx only bounds Open.
func Open(ctx context.Context, name, address, token string, log *slog.Logger) (*End, error) {
	log = cmp.Or(log, slog.Default())
	if _, err := check(ctx, address, token); err != nil {
		return nil, fmt.Errorf("worker %s (%s): %w", name, address, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("worker %s (%s): local end: %w", name, address, err)
	}
	e := &End{name: name, address: address, token: token, ln: ln, lost: make(chan error, 16),
		log: log.With("worker", name, "address", address, "end", ln.Addr().String())}
	e.wg.Go(e.accept)
	return e, nil
}

// Addr is the local end's address, host:port on 127.0.0.1: what llama-server's --rpc gets.
func (e *End) Addr() string { return e.ln.Addr().String() }

// Lost tells of a link in use that dropped (the worker died or closed it) or of a link the worker
// refused (busy, bad token, unreachable) while no other was open; each error names the worker:
// "worker NAME (ADDRESS): ...".
// The channel is buffered; when nobody reads it, further errors are logged and dropped.
func (e *End) Lost() <-chan error { return e.lost }

// Bytes are the bytes carried so far: sent to the worker and received from it (after TLS, the
// RPC payload).
func (e *End) Bytes() (sent, received int64) { return e.sent.Load(), e.received.Load() }

// Close closes the listener and every link, and waits for their goroutines.
func (e *End) Close() error {
	conns := e.conns.shut() // first, so that accept takes the listener's end for Close's
	err := e.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	e.wg.Wait()
	return err
}

func (e *End) report(err error) {
	err = fmt.Errorf("worker %s (%s): %w", e.name, e.address, err)
	e.log.Warn("worker link lost", "err", err)
	select {
	case e.lost <- err:
	default:
		e.log.Warn("worker link error not delivered: nobody reads Lost")
	}
}

func (e *End) accept() {
	for {
		c, err := e.ln.Accept()
		if err != nil {
			if !e.conns.isClosed() {
				e.log.Error("local end stopped accepting", "err", err)
			}
			return
		}
		if !e.conns.add(c) {
			c.Close()
			return
		}
		e.wg.Go(func() { e.carry(c) })
	}
}

// carry splices one local connection over a new link. Only llama-server's connections get one
// (see ownProcess), and only when their first byte can begin llama.cpp's RPC (HELLO): anything
// else is closed without dialing the worker. A new link that fails is reported on Lost only when
// no other link is carried: a stranger's refused link is not the loss of a model's running one.
func (e *End) carry(local net.Conn) {
	defer e.conns.remove(local)
	defer local.Close()
	first, ok := e.admit(local)
	if !ok {
		return
	}
	l := e.dial(first)
	if l == nil {
		return
	}
	e.carrying.Add(1)
	defer e.carrying.Add(-1)
	if !e.conns.add(l.conn) {
		l.conn.Close()
		return
	}
	defer e.conns.remove(l.conn)
	defer l.conn.Close()
	e.log.Debug("link open", "local", local.RemoteAddr().String())
	e.splice(local, l)
	e.log.Debug("link closed")
}

// admit says whether local may have a link, and reads its first byte.
func (e *End) admit(local net.Conn) (byte, bool) {
	// The port is on loopback and published (in /api/status): only llama-server (this process's
	// children) gets a link, which carries the token's authority.
	if ok, err := ownProcess(local); !ok {
		e.log.Warn("local end: connection refused: not llama-server's", "local", local.RemoteAddr().String(), "err", err)
		return 0, false
	}
	var first [1]byte
	local.SetReadDeadline(time.Now().Add(dialTimeout))
	if _, err := io.ReadFull(local, first[:]); err != nil || !ggmlrpc.CanStart(first[0]) {
		e.log.Warn("local end: connection refused: not llama.cpp's RPC", "local", local.RemoteAddr().String(), "first", first[0], "err", err)
		return 0, false
	}
	local.SetReadDeadline(time.Time{})
	return first[0], true
}

// dial opens a new link to the worker and sends it first; nil when that fails (reported on Lost
// only when no other link is carried).
func (e *End) dial(first byte) *link {
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	l, err := dialLink(ctx, e.address, e.token, opRPC, headName())
	cancel()
	if err != nil {
		switch {
		case e.conns.isClosed():
		case e.carrying.Load() > 0:
			e.log.Warn("local end: a new link failed; the open one goes on", "err", err)
		default:
			e.report(err)
		}
		return nil
	}
	if _, err := l.conn.Write([]byte{first}); err != nil {
		l.conn.Close()
		return nil
	}
	e.sent.Add(1)
	return l
}

// splice copies local to l and back until either side ends. The link is lost when the worker's
// side fails first: a read from it that ends (download) or a write to it that fails (upload). The
// local side ending first (llama-server closed, or we did) ends the link without a report.
// Whichever goroutine sees the end first decides.
func (e *End) splice(local net.Conn, l *link) {
	var ended atomic.Bool
	lost := func(why error) {
		if ended.CompareAndSwap(false, true) && why != nil && !e.conns.isClosed() {
			if errors.Is(why, io.EOF) {
				why = errors.New("the worker closed the link")
			}
			e.report(fmt.Errorf("link lost: %w", why))
		}
	}
	up := make(chan struct{})
	go func() {
		defer close(up)
		lr := &counted{r: local, n: &e.sent}
		_, err := io.Copy(l.conn, lr)
		if err != nil && lr.err == nil {
			lost(err) // the write to the worker failed
		} else {
			ended.CompareAndSwap(false, true) // llama-server closed its side, or we closed it
		}
		l.conn.Close()
	}()
	rr := &counted{r: l.r, n: &e.received}
	io.Copy(local, rr)
	if rr.err != nil {
		lost(rr.err)
	}
	// A clean close (FIN) of the local side, so llama-server notices at once.
	local.Close()
	<-up
}

// counted counts the bytes read through it, before they are passed on (whoever got them at the
// other end sees them counted), and remembers why reading stopped (io.EOF included), to tell the
// worker's end of a link from the local side's.
type counted struct {
	r   io.Reader
	n   *atomic.Int64
	err error
}

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	if err != nil {
		c.err = err
	}
	return n, err
}
