package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// DefaultBodyTimeout is how long a request body may take to arrive when Options.BodyTimeout is 0:
// the default body limit (64 MiB) in that time needs about 4.5 Mbit/s.
const DefaultBodyTimeout = 2 * time.Minute

// bodyChunk is the most a body's buffer holds before its bytes arrive: a declared Content-Length is
// a promise, not memory, so the buffer starts at min(Content-Length, bodyChunk) and doubles as the
// bytes come.
const bodyChunk = 64 << 10

// bodyDeadline gives a request with a body srv.bodyWait to send all of it. The connection's read
// deadline is set as the request starts and cleared once the body was read to its end, so that it
// never bounds the answer: after the body net/http reads the connection in the background, and a
// deadline expiring there would cancel the request's context (a long stream, a load waited for).
// That is why this is not http.Server.ReadTimeout. A body that stalls fails its read (readBody:
// errBodyTimeout, 408); net/http then closes the connection, and the buffer is garbage.
func (srv *Server) bodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || srv.bodyWait <= 0 || bodyBuffered(r.Body) {
			next.ServeHTTP(w, r)
			return
		}
		rc := *http.NewResponseController(w) // a value: the body below holds it, one allocation for both
		if rc.SetReadDeadline(time.Now().Add(srv.bodyWait)) == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
		next.ServeHTTP(w, r)
	})
}

// bodyBuffered reports a body that has already arrived whole (router/front knows): reading it cannot
// stall, and setting and clearing a deadline for it would cost two timer changes for nothing.
func bodyBuffered(body io.Reader) bool {
	b, ok := body.(interface{ Buffered() bool })
	return ok && b.Buffered()
}

// deadlineBody clears the connection's read deadline when its body has been read to the end. Only
// the handler's goroutine reads it.
type deadlineBody struct {
	io.ReadCloser
	rc   http.ResponseController
	done bool // the deadline was cleared
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// readBody reads the whole request body, bounded by the body limit (413 past it) and, through
// bodyDeadline, by the body timeout (408). Memory grows with the bytes that arrived, never with the
// length a client merely declared.
func (srv *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > srv.limit {
		return nil, &http.MaxBytesError{Limit: srv.limit}
	}
	buf, err := readGrowing(http.MaxBytesReader(w, r.Body, srv.limit), r.ContentLength, srv.limit)
	if err != nil {
		var mb *http.MaxBytesError
		switch {
		case errors.As(err, &mb):
			return nil, err
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, fmt.Errorf("%w (body timeout %s): %w", errBodyTimeout, srv.bodyWait, err)
		}
		return nil, fmt.Errorf("%w: %w", errBodyRead, err)
	}
	return buf, nil
}

// readGrowing reads r to its end. The buffer starts at min(declared, bodyChunk) bytes (512 when the
// length is unknown) and doubles as it fills, never past the declared length nor past limit+1: a
// declared length that arrives whole ends in a buffer of exactly that size (the only one up to
// bodyChunk), and one that does not costs at most twice what arrived.
func readGrowing(r io.Reader, declared, limit int64) ([]byte, error) {
	size := 512
	if declared > 0 {
		size = int(min(declared, bodyChunk))
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if declared > 0 && int64(len(buf)) == declared {
				// Every declared byte came: only the end should follow, which needs no room.
				var probe [1]byte
				n, err := r.Read(probe[:])
				if n > 0 { // more than declared: from here the length is unknown
					buf, declared = append(buf, probe[0]), 0
				}
				if err == io.EOF {
					return buf, nil
				}
				if err != nil {
					return nil, err
				}
				continue
			}
			next := int64(2 * cap(buf))
			if declared > int64(len(buf)) {
				next = min(next, declared)
			}
			next = max(min(next, limit+1), int64(len(buf))+1)
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
