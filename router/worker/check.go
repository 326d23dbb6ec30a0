package worker

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/llamatray/llamatray/router/internal/neterr"
	"github.com/llamatray/llamatray/router/internal/safetext"
)

// The timeouts of both sides of a link: the TCP keepalive that notices a peer machine gone
// silent (no FIN, no RST) on an idle link within about keepIdle+keepInterval*keepCount = 10 s,
// under the 15 s the issue allows, and userTimeout for unacknowledged data on a busy one
// (TCP_USER_TIMEOUT on Linux, TCP_RXT_CONNDROPTIME on macOS, TCP_MAXRT on Windows; the BSDs have
// the keepalive alone: see sockopt_*.go). Probes are answered by the peer's kernel: a worker busy computing
// for a long time is not taken for a dead one.
const (
	keepIdle     = 4 * time.Second
	keepInterval = 2 * time.Second
	keepCount    = 3
	userTimeout  = 12 * time.Second
)

// link is an authenticated connection to a worker, after its answer line.
type link struct {
	conn *tls.Conn
	r    *bufio.Reader // reads conn; may hold bytes that followed the answer
	info Info
}

// dialLink dials address, does TLS and the token exchange with op, and returns the link once the
// worker has answered ok and proved it knows the token. ctx bounds all of it. Errors wrap one of
// ErrUnreachable, ErrBadToken, ErrNotWorker, ErrBusy, ErrWorkerDown; the callers add the address.
func dialLink(ctx context.Context, address, token, op, head string) (*link, error) {
	d := net.Dialer{
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: keepIdle, Interval: keepInterval, Count: keepCount},
		Control:         setUserTimeout,
	}
	raw, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	l, err := handshake(ctx, raw, token, op, head)
	if err != nil {
		raw.Close()
		return nil, err
	}
	return l, nil
}

func handshake(ctx context.Context, raw net.Conn, token, op, head string) (*link, error) {
	// ctx's deadline (or its cancellation) ends a peer that accepts but never answers.
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		raw.SetDeadline(dl)
	}
	// failed is err of a step, as otherwise says unless the peer was silent until ctx or a deadline ended.
	failed := func(err, otherwise error) error {
		var ne net.Error
		if ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
			return fmt.Errorf("%w: no answer to the link handshake: %w", ErrUnreachable, err)
		}
		return otherwise
	}
	conn := tls.Client(raw, clientTLS())
	if err := conn.HandshakeContext(ctx); err != nil {
		// Closed before answering a byte: what a worker does with a connection over its limits.
		if errors.Is(err, io.EOF) || neterr.Reset(err) {
			return nil, failed(err, fmt.Errorf("%w: closed before the TLS handshake (a worker with too many connections at once?): %w", ErrUnreachable, err))
		}
		return nil, failed(err, fmt.Errorf("%w: TLS handshake: %w", ErrNotWorker, err))
	}
	cs := conn.ConnectionState()
	p, err := proof(cs, token, "head")
	if err != nil {
		return nil, err
	}
	if err := writeLine(conn, request{Link: linkVersion, Proof: hex.EncodeToString(p), Op: op, Head: head}); err != nil {
		return nil, failed(err, fmt.Errorf("%w: %w", ErrNotWorker, err))
	}
	r := bufio.NewReaderSize(conn, maxFrame)
	var a answer
	if err := readLine(r, &a); err != nil {
		return nil, failed(err, fmt.Errorf("%w: no link answer: %w", ErrNotWorker, err))
	}
	if !a.OK {
		return nil, refusal(a)
	}
	if !checkProof(cs, token, "worker", a.Proof) {
		return nil, fmt.Errorf("%w: the worker could not prove it knows the token", ErrBadToken)
	}
	raw.SetDeadline(time.Time{})
	l := &link{conn: conn, r: r}
	if a.Info != nil {
		l.info = *a.Info
		// Shown in /api/status, the window and errors: another machine wrote it.
		l.info.Name = safetext.Clean(l.info.Name, maxShown)
		l.info.Version = safetext.Clean(l.info.Version, maxShown)
		l.info.BusyWith = safetext.Clean(l.info.BusyWith, maxShown)
	}
	return l, nil
}

// maxShown bounds what of a worker's words (its name, whom it is busy with, why it refused)
// reaches the head's status and errors.
const maxShown = 200

// refusals are the errors of the worker's refusal codes; an unknown code is ErrNotWorker.
var refusals = map[string]error{codeBadToken: ErrBadToken, codeBusy: ErrBusy, codeNoRPC: ErrWorkerDown,
	codeBadReq: errors.New("worker refused the request")}

func refusal(a answer) error {
	kind, ok := refusals[a.Code]
	if !ok {
		kind = ErrNotWorker
	}
	if msg := safetext.Clean(a.Error, maxShown); msg != "" {
		return fmt.Errorf("%w: %s", kind, msg)
	}
	return kind
}

// Check dials the worker at address, authenticates with token, asks its status and closes.
// ctx bounds it (give it a few seconds). Errors wrap ErrUnreachable, ErrBadToken, ErrNotWorker or
// ErrWorkerDown (the worker answers but its rpc-server is not running) and name the address. A
// busy worker is no error: Info says so.
func Check(ctx context.Context, address, token string) (Info, error) {
	info, err := check(ctx, address, token)
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", address, err)
	}
	return info, nil
}

// check is Check without the address in its errors.
func check(ctx context.Context, address, token string) (Info, error) {
	l, err := dialLink(ctx, address, token, opStatus, headName())
	if err != nil {
		return Info{}, err
	}
	l.conn.Close()
	return l.info, nil
}

// headName is how this machine names itself to a worker (shown in the worker's "busy" answer).
func headName() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "head"
	}
	return h
}
