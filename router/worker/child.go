package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/child"
	"github.com/llamatray/llamatray/router/internal/backoff"
	"github.com/llamatray/llamatray/router/internal/ggmlrpc"
)

const (
	rpcReadyTimeout = 30 * time.Second
	// rpcDialEvery is how often the worker tries to connect to a starting rpc-server: the moment
	// it listens, the worker's connection must be the first it accepts.
	rpcDialEvery = 2 * time.Millisecond
	// helloTimeout bounds the rpc-server's answer to the worker's HELLO; none means another
	// connection was accepted before the worker's.
	helloTimeout = 5 * time.Second
	backoffMin   = 500 * time.Millisecond
	backoffMax   = 30 * time.Second
	// steadyRun: a child that ran this long resets the restart backoff.
	steadyRun = time.Minute
	tailLines = 12
)

// The rpc-server's lines (on stderr) for each connection it serves.
const (
	lineAccepted = "Accepted client connection"
	lineClosed   = "Client connection closed"
)

// How a worker keeps its rpc-server from every other local process (Isolation).
const (
	// IsolationNetns: the rpc-server runs in a network namespace of its own (Linux), whose
	// loopback no process outside it reaches; the worker holds its one connection, passed out.
	IsolationNetns = "netns"
	// IsolationHeld: the rpc-server listens on the machine's 127.0.0.1 and the worker holds its
	// one connection (held), restarting it when it served another.
	IsolationHeld = "held"
)

var isolation = sync.OnceValues(probeIsolation)

// Isolation is how this process's workers keep their rpc-server from other local processes,
// IsolationNetns or IsolationHeld, and for the latter why no namespace could be made (found
// once per process, by making one).
func Isolation() (string, error) { return isolation() }

// handover gives the worker its connection to an rpc-server in a network namespace (Linux).
type handover interface {
	started()                                      // after Start: closes the child's end here
	receive(ctx context.Context) (net.Conn, error) // the connection, or an error when the child exits first
	close()
}

// errStranger: the rpc-server served a connection that is not the worker's.
var errStranger = errors.New("the rpc-server served a connection that is not the worker's")

// held is the rpc-server's one connection: the worker's own, its HELLO answered. llama.cpp's
// rpc-server serves one connection at a time, so while the worker holds this one every other
// connection to its port waits unserved; a head's session is carried over it, and when the
// session ends the rpc-server is killed (taking the waiting connections with it) and started
// again on a new port, held anew.
type held struct {
	conn  net.Conn
	hello []byte // the rpc-server's answer to the worker's HELLO: what a head's HELLO gets
	once  sync.Once
	done  chan struct{} // closed by release
}

// release ends the session on h: the rpc-server is killed, then h.conn closed.
func (h *held) release() { h.once.Do(func() { close(h.done) }) }

// rpcChild owns llama.cpp's rpc-server process: its run goroutine starts it bound to 127.0.0.1
// on a free port, holds its one connection (held), restarts it after each session and with
// backoff when it exits, and kills it when the context ends.
type rpcChild struct {
	path    string
	threads int
	netns   bool // run it in a network namespace of its own (IsolationNetns)
	log     *slog.Logger

	mu      sync.Mutex    // guards free, running, lastErr and change
	free    *held         // the held connection while no session has it, else nil
	running bool          // the rpc-server is up and held (free or in a session)
	lastErr error         // why the child last stopped
	change  chan struct{} // closed (and replaced) whenever free or running changes
}

func newRPCChild(path string, threads int, netns bool, log *slog.Logger) *rpcChild {
	return &rpcChild{path: path, threads: threads, netns: netns, log: log, change: make(chan struct{})}
}

// argv is the child's command line: loopback only, always.
func (c *rpcChild) argv(port int) []string {
	a := []string{c.path, "-H", "127.0.0.1", "-p", strconv.Itoa(port)}
	if c.threads > 0 {
		a = append(a, "-t", strconv.Itoa(c.threads))
	}
	return a
}

// set publishes h (nil: the child is down, for err; for a restart after a session when err is nil).
func (c *rpcChild) set(h *held, err error) {
	c.mu.Lock()
	c.free, c.running = h, h != nil
	if h == nil {
		c.lastErr = err
	}
	close(c.change)
	c.change = make(chan struct{})
	c.mu.Unlock()
}

// wait waits up to d for the child to be running (take: and free, which it then takes). Without
// take, a child down after a failure (restarting with backoff) is an error at once.
func (c *rpcChild) wait(ctx context.Context, d time.Duration, take bool) (*held, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		c.mu.Lock()
		h, ch, last, running := c.free, c.change, c.lastErr, c.running
		ok := running && (!take || h != nil)
		if ok && take {
			c.free = nil
		}
		c.mu.Unlock()
		if ok {
			return h, nil
		}
		if !take && !running && last != nil {
			return nil, fmt.Errorf("%w: %w", ErrWorkerDown, last)
		}
		select {
		case <-ch:
		case <-t.C:
			if last == nil {
				last = errors.New("it has not started yet")
			}
			return nil, fmt.Errorf("%w: %w", ErrWorkerDown, last)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// run is the owner goroutine. first gets nil once the child first holds its connection, or the
// error of its first start; after that, failures are logged and the child restarted.
func (c *rpcChild) run(ctx context.Context, first chan<- error) {
	wait := backoffMin
	started := false
	for {
		t0 := time.Now()
		err := c.once(ctx, func(h *held) {
			c.set(h, nil)
			if !started {
				started = true
				first <- nil
			}
		})
		c.set(nil, err)
		if ctx.Err() != nil {
			if !started {
				first <- ctx.Err()
			}
			return
		}
		if err == nil { // a session ended: a new rpc-server for the next one, at once
			wait = backoffMin
			continue
		}
		if !started {
			first <- err
			return
		}
		if time.Since(t0) > steadyRun {
			wait = backoffMin
		}
		c.log.Error("rpc-server stopped; restarting", "err", err, "in", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
		wait = backoff.Next(wait, backoffMin, backoffMax)
	}
}

// once runs one rpc-server until its session ends (nil), it exits, it serves a stranger or ctx
// ends; ready is called with its held connection.
func (c *rpcChild) once(ctx context.Context, ready func(*held)) error {
	port, err := child.FreePort()
	if err != nil {
		return err
	}
	argv := c.argv(port)
	cmd, hand, err := c.command(argv)
	if err != nil {
		return err
	}
	if hand != nil {
		defer hand.close()
	}
	watch := &strangers{seen: make(chan struct{})}
	p, err := child.StartProcess(cmd, c.log, tailLines, watch.line)
	if err != nil {
		return fmt.Errorf("start %s: %w", c.path, err)
	}
	where := "127.0.0.1"
	if hand != nil {
		hand.started()
		where = "its own network namespace (pid is the shim's)"
	}
	log := c.log.With("pid", p.PID())
	log.Info("rpc-server started", "argv", strings.Join(argv, " "), "in", where)
	stop := func() { p.Kill(); <-p.Done() }

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	h, err := c.hold(ctx, addr, p, hand)
	if err != nil {
		stop()
		return err
	}
	defer h.conn.Close() // after the kill: a connection waiting behind it is never served
	log.Info("rpc-server ready and held", "addr", addr, "in", where)
	ready(h)
	select {
	case <-p.Done():
		return fmt.Errorf("rpc-server exited (%v): %s", p.Err(), p.Tail())
	case <-ctx.Done():
		stop()
		log.Info("rpc-server stopped")
		return ctx.Err()
	case <-watch.seen:
		stop()
		log.Warn("rpc-server served a connection not the worker's; restarted on a new port")
		return errStranger
	case <-h.done:
		c.set(nil, nil) // down from here: a status waits for the next one, not for this one's kill
		stop()
		log.Debug("rpc-server's session ended; restarting it for the next")
		return nil
	}
}

// hold gets the worker's connection to the rpc-server at addr (from hand, in a network
// namespace; else connecting the moment it listens) and checks that its HELLO is answered: that
// its connection is the one the rpc-server serves.
func (c *rpcChild) hold(ctx context.Context, addr string, p *child.Process, hand handover) (*held, error) {
	var conn net.Conn
	var err error
	if hand != nil {
		conn, err = hand.receive(ctx)
		if err != nil && ctx.Err() == nil {
			// The shim exited, or will at once: its exit comes after all of its output.
			select {
			case <-p.Done():
				err = fmt.Errorf("rpc-server exited before it accepted connections (%v)", p.Err())
			case <-time.After(helloTimeout):
			}
		}
	} else {
		conn, err = dialStarted(ctx, addr, p.Done(), p.Err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, p.Tail())
	}
	conn.SetDeadline(time.Now().Add(helloTimeout))
	var hello []byte
	_, err = conn.Write(ggmlrpc.Hello())
	if err == nil {
		hello, err = ggmlrpc.ReadAnswer(conn)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("rpc-server on %s did not answer the worker's HELLO (%w; another connection came first?): %s", addr, err, p.Tail())
	}
	conn.SetDeadline(time.Time{})
	return &held{conn: conn, hello: hello, done: make(chan struct{})}, nil
}

// dialStarted connects to the rpc-server at addr the moment it listens: until it exits (done
// closes; exitErr says how), ctx ends or rpcReadyTimeout passes.
func dialStarted(ctx context.Context, addr string, done <-chan struct{}, exitErr func() error) (net.Conn, error) {
	deadline := time.Now().Add(rpcReadyTimeout)
	tick := time.NewTicker(rpcDialEvery)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return nil, fmt.Errorf("rpc-server exited before it accepted connections (%v)", exitErr())
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return conn, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("rpc-server did not accept connections on %s within %s", addr, rpcReadyTimeout)
		}
	}
}

// strangers watches the rpc-server's output lines and closes seen when they show a connection
// served that is not the worker's: a second accepted one, or one closed, while the worker holds
// its own.
type strangers struct {
	accepted int  // only line, called for one line at a time, touches accepted and told
	told     bool // seen is closed
	seen     chan struct{}
}

func (s *strangers) line(l string) {
	switch strings.TrimSpace(l) {
	case lineAccepted:
		s.accepted++
	case lineClosed:
		s.accepted += 2 // the worker closes its own only after the rpc-server is killed
	}
	if s.accepted > 1 && !s.told {
		s.told = true
		close(s.seen)
	}
}
