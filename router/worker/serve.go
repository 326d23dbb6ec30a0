package worker

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/internal/ggmlrpc"
)

// busyWait is how long a second "rpc" request waits for the open session to end before it is
// refused as busy: llama-server closes a connection and opens the next one at once, and the
// worker may see the new link a moment before the old one's end.
const busyWait = 2 * time.Second

// answerTimeout bounds the worker's answer to a request (and its write), after the request line.
const answerTimeout = 15 * time.Second

// restartWait is how long a request waits for the rpc-server to be up: it is started afresh
// after every session, which takes it a moment.
const restartWait = 10 * time.Second

// Options configure Serve.
type Options struct {
	// Listen is the link's address, HOST:PORT (any interface: heads connect to it).
	Listen string
	// Token is the pairing token heads must prove they know (see NewToken).
	Token string
	// RPCServer is the path of llama.cpp's rpc-server (ggml-rpc-server); it is always started
	// bound to 127.0.0.1.
	RPCServer string
	// Threads, when > 0, is the rpc-server's -t (threads of its CPU device).
	Threads int
	Logger  *slog.Logger

	// Name is how the worker calls itself to heads (default: the host name).
	Name string
	// Version is Llamatray's version, told to heads.
	Version string
	// Ready, when set, is called once the link listens and the rpc-server accepts connections,
	// with the link listener's address.
	Ready func(addr string)

	held bool // tests: IsolationHeld even where a network namespace can be made
}

// server is one Serve call's state.
type server struct {
	o   Options
	log *slog.Logger
	tls *tls.Config
	rpc *rpcChild
	ctx context.Context
	wg  sync.WaitGroup
	// conns are the accepted connections, closed when Serve ends.
	conns connSet
	mu    sync.Mutex // guards sess, pending, queue
	sess  *session   // the open RPC session, or nil
	// pending counts the handshakes in progress per host (hostKey); queue holds them, oldest
	// first.
	pending map[string]int
	queue   []*handshaking
}

// handshaking is a connection admitted to authenticate, until it has its request in.
type handshaking struct {
	c    net.Conn
	host string
}

type session struct {
	head, remote string
	since        time.Time
	done         chan struct{} // closed when the session ends
}

func (s *session) String() string {
	return fmt.Sprintf("%s (head %q) since %s", s.remote, s.head, s.since.Format(time.RFC3339))
}

// Serve runs the worker until ctx ends (then it returns nil, its rpc-server killed and every link
// closed): it starts the rpc-server bound to 127.0.0.1 on a free port (on Linux in a network
// namespace of its own: Isolation) and holds its one connection (see held; restarted on a new
// port after each session, and with backoff if it exits), and accepts link connections on
// o.Listen, each authenticated by o.Token, a "status" answered and an "rpc" carried over the held
// connection, one session at a time.
func Serve(ctx context.Context, o Options) error {
	path, err := o.check()
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	log := o.Logger.With("worker", o.Name)
	cert, err := selfSigned(o.Name)
	if err != nil {
		return fmt.Errorf("worker: certificate: %w", err)
	}
	// The head's side of each link has the same keepalive (check.go): a head machine that vanished
	// mid-session does not leave the worker busy for it.
	lc := net.ListenConfig{
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: keepIdle, Interval: keepInterval, Count: keepCount},
		Control:         setUserTimeout,
	}
	ln, err := lc.Listen(context.Background(), "tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	defer ln.Close()
	mode := o.isolation(log)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &server{o: o, log: log, tls: serverTLS(cert), rpc: newRPCChild(path, o.Threads, mode == IsolationNetns, log),
		ctx: ctx, pending: map[string]int{}}
	first := make(chan error, 1)
	childDone := make(chan struct{})
	go func() { defer close(childDone); s.rpc.run(ctx, first) }()
	defer func() { cancel(); <-childDone }()
	if err := <-first; err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("worker: %w", err)
	}
	log.Info("worker listening", "listen", ln.Addr().String())
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}
	defer context.AfterFunc(ctx, func() { ln.Close(); s.conns.closeAll() })()
	return s.accept(ln)
}

// check validates o and fills in its defaults; it returns the rpc-server's path.
func (o *Options) check() (string, error) {
	if o.Listen == "" {
		return "", errors.New("no listen address")
	}
	if err := config.CheckWorkerToken(o.Token); err != nil {
		return "", err
	}
	if o.RPCServer == "" {
		return "", errors.New("no rpc-server given")
	}
	path, err := exec.LookPath(o.RPCServer)
	if err != nil {
		return "", fmt.Errorf("rpc-server %s: %w", o.RPCServer, err)
	}
	if o.Name == "" {
		o.Name, _ = os.Hostname()
	}
	o.Logger = cmp.Or(o.Logger, slog.Default())
	return path, nil
}

// isolation is the rpc-server's isolation (Isolation, or IsolationHeld for the tests), logged.
func (o *Options) isolation(log *slog.Logger) string {
	mode, why := Isolation()
	if o.held {
		mode, why = IsolationHeld, errors.New("turned off")
	}
	if why != nil {
		log.Info("rpc-server on 127.0.0.1, its one connection held by the worker", "isolation", mode, "why", why)
	} else {
		log.Info("rpc-server in its own network namespace", "isolation", mode)
	}
	return mode
}

func (s *server) info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := Info{Name: s.o.Name, Version: s.o.Version}
	if s.sess != nil {
		in.Busy, in.BusyWith = true, s.sess.String()
	}
	return in
}

// handle authenticates one link connection and serves its request.
func (s *server) handle(raw net.Conn, hs *handshaking) {
	defer s.conns.remove(raw)
	defer raw.Close()
	log := s.log.With("remote", raw.RemoteAddr().String())
	release := func() { s.unadmit(hs) }
	defer release()

	raw.SetDeadline(time.Now().Add(handshakeTimeout))
	conn := tls.Server(raw, s.tls)
	if err := conn.HandshakeContext(s.ctx); err != nil {
		log.Debug("link: TLS handshake failed", "err", err)
		return
	}
	r := bufio.NewReaderSize(conn, maxFrame)
	var req request
	if err := readLine(r, &req); err != nil {
		log.Debug("link: bad request", "err", err)
		refuse(conn, raw, answer{Code: codeBadReq, Error: err.Error()})
		return
	}
	// The request is in: the rest (a refusal's delay, waiting out a closing session, the
	// rpc-server's restart) is the worker's own time, bounded by answerTimeout.
	raw.SetDeadline(time.Now().Add(answerTimeout))
	if req.Link != linkVersion {
		refuse(conn, raw, answer{Code: codeBadReq, Error: fmt.Sprintf("link %q not spoken here (this worker speaks %s)", req.Link, linkVersion)})
		return
	}
	cs := conn.ConnectionState()
	if !checkProof(cs, s.o.Token, "head", req.Proof) {
		log.Warn("link refused: wrong token", "head", req.Head)
		select {
		case <-time.After(badTokenDelay):
		case <-s.ctx.Done():
			return
		}
		refuse(conn, raw, answer{Code: codeBadToken, Error: "wrong pairing token"})
		return
	}
	p, err := proof(cs, s.o.Token, "worker")
	if err != nil {
		log.Error("link: proof", "err", err)
		return
	}
	release() // a head that proved the token is not given up for others' handshakes
	s.serveOp(conn, raw, r, req, hex.EncodeToString(p), log)
}

// serveOp serves req, of a head that proved the token (proofHex, the worker's own proof).
func (s *server) serveOp(conn *tls.Conn, raw net.Conn, r *bufio.Reader, req request, proofHex string, log *slog.Logger) {
	switch req.Op {
	case opStatus:
		// A worker whose rpc-server is down (restarting after it exited) cannot take a model:
		// the head hears it before it spawns llama-server.
		if _, err := s.rpc.wait(s.ctx, restartWait, false); err != nil {
			refuse(conn, raw, answer{Code: codeNoRPC, Error: fmt.Sprintf("rpc-server not running: %v", err)})
			return
		}
		in := s.info()
		writeLine(conn, answer{OK: true, Proof: proofHex, Info: &in})
	case opRPC:
		s.session(conn, r, req.Head, raw.RemoteAddr().String(), proofHex, log)
	default:
		refuse(conn, raw, answer{Code: codeBadReq, Error: fmt.Sprintf("unknown op %q", req.Op)})
	}
}

// lingerFor and lingerMax bound what refuse reads of a refused head's input before it closes.
const (
	lingerFor = time.Second
	lingerMax = 1 << 20
)

// refuse sends a refusal and ends the connection so that the head reads it: TLS's close_notify and
// the TCP half-close go first, then what the head still sends (the rest of a huge line, say) is
// read and dropped for up to lingerFor. Closing with that input unread would send a reset, which
// can reach the head before the refusal does and destroy it there (Windows does so every time).
func refuse(conn *tls.Conn, raw net.Conn, a answer) {
	if writeLine(conn, a) != nil {
		return
	}
	_ = conn.CloseWrite()
	if cw, ok := raw.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = raw.SetReadDeadline(time.Now().Add(lingerFor))
	_, _ = io.CopyN(io.Discard, raw, lingerMax)
}

// begin opens the session for head, waiting up to busyWait for an open one to end.
func (s *server) begin(head, remote string) (*session, error) {
	t := time.NewTimer(busyWait)
	defer t.Stop()
	for {
		s.mu.Lock()
		cur := s.sess
		if cur == nil {
			s.sess = &session{head: head, remote: remote, since: time.Now(), done: make(chan struct{})}
			cur = s.sess
			s.mu.Unlock()
			return cur, nil
		}
		s.mu.Unlock()
		select {
		case <-cur.done:
		case <-t.C:
			return nil, fmt.Errorf("busy: serving %s", cur)
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		}
	}
}

func (s *server) end(sess *session) {
	s.mu.Lock()
	if s.sess == sess {
		s.sess = nil
	}
	s.mu.Unlock()
	close(sess.done)
}

// session carries an authenticated "rpc" link over the rpc-server's held connection: the head's
// HELLO is answered with the rpc-server's answer to the worker's own, then bytes are spliced both
// ways. When either side ends, the rpc-server is killed and started afresh for the next session.
func (s *server) session(conn *tls.Conn, r *bufio.Reader, head, remote, proofHex string, log *slog.Logger) {
	sess, err := s.begin(head, remote)
	if err != nil {
		log.Info("link refused", "head", head, "err", err)
		writeLine(conn, answer{Code: codeBusy, Error: err.Error()})
		return
	}
	defer s.end(sess)
	h, err := s.rpc.wait(s.ctx, restartWait, true)
	if err != nil {
		log.Error("link refused: rpc-server down", "err", err)
		writeLine(conn, answer{Code: codeNoRPC, Error: err.Error()})
		return
	}
	defer h.release()
	in := s.info()
	if err := writeLine(conn, answer{OK: true, Proof: proofHex, Info: &in}); err != nil {
		return
	}
	// The head's first RPC message must be HELLO: the rpc-server answered the worker's already.
	hello, err := ggmlrpc.ReadHello(r)
	if err != nil {
		log.Warn("rpc session refused: no HELLO from the head", "head", head, "err", err)
		return
	}
	conn.NetConn().SetDeadline(time.Time{})
	if _, err := conn.Write(h.hello); err != nil {
		return
	}
	log.Info("rpc session open", "head", head, "hello", len(hello))
	t0 := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(conn, h.conn)
		conn.Close() // the rpc-server ended the session: end the link
	}()
	// Read only: bufio's WriteTo would carry the bulk of a model's upload in 4 KiB writes.
	io.Copy(h.conn, struct{ io.Reader }{r})
	// The head ended the link: the rpc-server is killed before its connection is closed, so that
	// no connection waiting behind it is ever served.
	h.release()
	<-done
	log.Info("rpc session closed", "head", head, "duration", time.Since(t0).Round(time.Millisecond))
}
