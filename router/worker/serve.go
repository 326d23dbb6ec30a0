package worker

import (
	"bufio"
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

	"github.com/llamatray/llamatray/router/internal/backoff"
)

// busyWait is how long a second "rpc" request waits for the open session to end before it is
// refused as busy: llama-server closes a connection and opens the next one at once, and the
// worker may see the new link a moment before the old one's end.
const busyWait = 2 * time.Second

// answerTimeout bounds the worker's answer to a request (and its write), after the request line.
const answerTimeout = 15 * time.Second

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
}

// server is one Serve call's state.
type server struct {
	o    Options
	log  *slog.Logger
	tls  *tls.Config
	rpc  *rpcChild
	ctx  context.Context
	wg   sync.WaitGroup
	mu   sync.Mutex // guards sess, conns, pending, npending
	sess *session   // the open RPC session, or nil
	// conns are the accepted connections, closed when Serve ends.
	conns map[net.Conn]struct{}
	// pending counts the handshakes in progress per remote IP; npending is their sum.
	pending  map[string]int
	npending int
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
// closed): it starts the rpc-server bound to 127.0.0.1 on a free port (restarted with backoff if
// it exits), and accepts link connections on o.Listen, each authenticated by o.Token, a "status"
// answered and an "rpc" spliced to a new connection to the rpc-server, one session at a time.
func Serve(ctx context.Context, o Options) error {
	if o.Listen == "" {
		return errors.New("worker: no listen address")
	}
	if err := validToken(o.Token); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if o.RPCServer == "" {
		return errors.New("worker: no rpc-server given")
	}
	path, err := exec.LookPath(o.RPCServer)
	if err != nil {
		return fmt.Errorf("worker: rpc-server %s: %w", o.RPCServer, err)
	}
	if o.Name == "" {
		o.Name, _ = os.Hostname()
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("worker", o.Name)
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

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &server{o: o, log: log, tls: serverTLS(cert), rpc: newRPCChild(path, o.Threads, log),
		ctx: ctx, conns: map[net.Conn]struct{}{}, pending: map[string]int{}}
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

	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		s.mu.Lock()
		conns := make([]net.Conn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	defer stop()
	var retry time.Duration // backoff after an accept error (out of file descriptors, say)
	for {
		c, err := ln.Accept()
		if err != nil && ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
			retry = backoff.Next(retry, 5*time.Millisecond, time.Second)
			log.Warn("worker: accept failed; retrying", "err", err, "in", retry)
			select {
			case <-time.After(retry):
			case <-ctx.Done():
			}
			continue
		}
		if err != nil {
			s.wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("worker: accept: %w", err)
		}
		retry = 0
		if !s.track(c) {
			c.Close()
			continue
		}
		s.wg.Add(1)
		go s.handle(c)
	}
}

// track registers c so Serve's end closes it; false once the context ended.
func (s *server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// admit counts a handshake from host; false when host or the worker has too many in progress.
func (s *server) admit(host string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.npending >= maxHandshakes || s.pending[host] >= maxHandshakesPerHost {
		return false
	}
	s.pending[host]++
	s.npending++
	return true
}

func (s *server) unadmit(host string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.npending--
	if s.pending[host]--; s.pending[host] <= 0 {
		delete(s.pending, host)
	}
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
func (s *server) handle(raw net.Conn) {
	defer s.wg.Done()
	defer s.untrack(raw)
	defer raw.Close()
	log := s.log.With("remote", raw.RemoteAddr().String())
	host, _, _ := net.SplitHostPort(raw.RemoteAddr().String())
	if !s.admit(host) {
		log.Warn("link refused: too many handshakes at once", "from", host)
		return
	}
	held := true
	release := func() {
		if held {
			held = false
			s.unadmit(host)
		}
	}
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
		writeLine(conn, answer{Code: codeBadReq, Error: err.Error()})
		return
	}
	// The request is in: the rest (a refusal's delay, waiting out a closing session, the
	// rpc-server's restart) is the worker's own time, bounded by answerTimeout.
	raw.SetDeadline(time.Now().Add(answerTimeout))
	if req.Link != linkVersion {
		writeLine(conn, answer{Code: codeBadReq, Error: fmt.Sprintf("link %q not spoken here (this worker speaks %s)", req.Link, linkVersion)})
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
		writeLine(conn, answer{Code: codeBadToken, Error: "wrong pairing token"})
		return
	}
	p, err := proof(cs, s.o.Token, "worker")
	if err != nil {
		log.Error("link: proof", "err", err)
		return
	}
	switch req.Op {
	case opStatus:
		// A worker whose rpc-server is down (restarting after it exited) cannot take a model:
		// the head hears it before it spawns llama-server.
		if err := s.rpc.down(); err != nil {
			writeLine(conn, answer{Code: codeNoRPC, Error: fmt.Sprintf("rpc-server not running: %v", err)})
			return
		}
		in := s.info()
		writeLine(conn, answer{OK: true, Proof: hex.EncodeToString(p), Info: &in})
	case opRPC:
		release()
		s.session(conn, r, req.Head, raw.RemoteAddr().String(), hex.EncodeToString(p), log)
	default:
		writeLine(conn, answer{Code: codeBadReq, Error: fmt.Sprintf("unknown op %q", req.Op)})
	}
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

// session splices an authenticated "rpc" link to a new connection to the rpc-server.
func (s *server) session(conn *tls.Conn, r *bufio.Reader, head, remote, proofHex string, log *slog.Logger) {
	sess, err := s.begin(head, remote)
	if err != nil {
		log.Info("link refused", "head", head, "err", err)
		writeLine(conn, answer{Code: codeBusy, Error: err.Error()})
		return
	}
	defer s.end(sess)
	addr, err := s.rpc.wait(s.ctx, 5*time.Second)
	var rpc net.Conn
	if err == nil {
		rpc, err = net.DialTimeout("tcp", addr, 5*time.Second)
	}
	if err != nil {
		log.Error("link refused: rpc-server down", "err", err)
		writeLine(conn, answer{Code: codeNoRPC, Error: err.Error()})
		return
	}
	if !s.track(rpc) {
		rpc.Close()
		return
	}
	defer s.untrack(rpc)
	defer rpc.Close()
	in := s.info()
	if err := writeLine(conn, answer{OK: true, Proof: proofHex, Info: &in}); err != nil {
		return
	}
	conn.NetConn().SetDeadline(time.Time{})
	log.Info("rpc session open", "head", head)
	t0 := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(conn, rpc)
		conn.Close() // the rpc-server ended the session: end the link
	}()
	// Read only: bufio's WriteTo would carry the bulk of a model's upload in 4 KiB writes.
	io.Copy(rpc, struct{ io.Reader }{r})
	rpc.Close() // the head ended the link: end the rpc-server's session
	<-done
	log.Info("rpc session closed", "head", head, "duration", time.Since(t0).Round(time.Millisecond))
}
