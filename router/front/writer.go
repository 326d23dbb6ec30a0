package front

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llamatray/llamatray/router/internal/h1"
)

// sniffLen is how much of a body net/http looks at for a missing Content-Type, and how much of it
// the writer holds back before the head is sent: an answer that ends within it gets a
// Content-Length, as net/http gives one.
const sniffLen = 512

// bufferBeforeChunking is how much of an answer of unknown length the writer holds before it
// sends the head and starts chunking (net/http's is 2 KiB).
const bufferBeforeChunking = 2 << 10

// writer is the http.ResponseWriter of a request the front serves, on the connection's buffered
// writer. It does what net/http's does for a handler: a Date, a sniffed Content-Type when none was
// set, a Content-Length for an answer that ends before its head had to go out, chunking (with
// trailers: those the Trailer header announced, and http.TrailerPrefix ones) otherwise, no body
// for a HEAD request or a 1xx, 204 or 304 status, and Connection: close when the connection ends
// after it. Only the handler's goroutine uses it.
type writer struct {
	c      *conn
	req    *http.Request
	body   *reqBody // nil when the request has none, else bodyOf
	bodyOf reqBody
	bw     *bufio.Writer
	header http.Header

	status     int   // written status; 0 until WriteHeader
	sent       bool  // the head is on bw
	chunked    bool  // the body goes in chunks
	length     int64 // declared Content-Length, -1 when none
	written    int64 // body bytes the handler wrote
	held       []byte
	trailers   []string // announced trailer names
	closeAfter bool     // the connection ends after this answer
	done       bool     // the handler returned
	err        error    // the first write error on the connection
}

func (w *writer) Header() http.Header { return w.header }

func (w *writer) WriteHeader(code int) {
	if w.done {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if w.status != 0 {
		w.c.s.log.Warn("superfluous WriteHeader call", "status", code, "path", w.req.URL.Path)
		return
	}
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		// An informational answer goes out at once, with the headers set so far; the real one follows.
		w.bw.WriteString("HTTP/1.1 ")
		w.bw.WriteString(statusLine(code))
		writeHeaders(w.bw, w.header, []string{"Content-Length", "Transfer-Encoding"}) // the final answer's framing
		w.bw.WriteString("\r\n")
		w.fail(w.bw.Flush())
		return
	}
	w.status = code
	w.length = -1
	if cl := w.header.Get("Content-Length"); cl != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(cl), 10, 64)
		if err == nil && n >= 0 {
			w.length = n
		} else {
			w.c.s.log.Warn("invalid Content-Length of an answer, dropped", "value", cl, "path", w.req.URL.Path)
			w.header.Del("Content-Length")
		}
	}
}

// bodyAllowed reports whether the status has a body.
func (w *writer) bodyAllowed() bool {
	return !(w.status >= 100 && w.status < 200 || w.status == http.StatusNoContent || w.status == http.StatusNotModified)
}

func (w *writer) Write(p []byte) (int, error) {
	if w.done {
		return 0, errAfterReturn
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !w.bodyAllowed() {
		return 0, http.ErrBodyNotAllowed
	}
	if w.length >= 0 && w.written+int64(len(p)) > w.length {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if w.req.Method == http.MethodHead {
		if !w.sent && len(w.held) < sniffLen { // for the Content-Type only: a HEAD answer has no body
			w.held = append(w.held, p[:min(len(p), sniffLen-len(w.held))]...)
		}
		return len(p), nil
	}
	if !w.sent {
		if w.length < 0 && len(w.held)+len(p) <= bufferBeforeChunking {
			w.held = append(w.held, p...) // it may end here, and get a length
			return len(p), nil
		}
		held := w.held
		if len(held) == 0 {
			w.held = p // for the sniffing only
		}
		w.sendHead(false)
		w.held = nil
		if len(held) > 0 {
			if _, err := w.writeBody(held); err != nil {
				return 0, err
			}
		}
	}
	return w.writeBody(p)
}

// writeBody writes p as the body's next bytes, a chunk when chunked.
func (w *writer) writeBody(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.chunked {
		w.bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		w.bw.WriteString("\r\n")
	}
	n, err := w.bw.Write(p)
	if w.chunked && err == nil {
		_, err = w.bw.WriteString("\r\n")
	}
	w.fail(err)
	return n, err
}

// sendHead writes the status line and headers; end says the handler returned, so that a body of
// unknown length that ended held back gets its length.
func (w *writer) sendHead(end bool) {
	if w.sent {
		return
	}
	w.sent = true
	h := w.header
	if w.c.closing() || w.req.Close || w.body != nil && !w.body.read() {
		w.closeAfter = true // (a body left unread is dropped with its connection)
	}
	if h1.HeaderHas(h["Connection"], "close") {
		w.closeAfter = true
	}
	if w.bodyAllowed() && w.written > 0 {
		if _, ok := h["Content-Type"]; !ok && len(h["Transfer-Encoding"]) == 0 {
			h["Content-Type"] = []string{http.DetectContentType(w.held[:min(len(w.held), sniffLen)])}
		}
	}
	for _, v := range h["Trailer"] {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				w.trailers = append(w.trailers, http.CanonicalHeaderKey(k))
			}
		}
	}
	delete(h, "Transfer-Encoding") // the framing is the writer's
	switch {
	case !w.bodyAllowed():
		delete(h, "Content-Length")
	case w.length >= 0:
	case end && len(w.trailers) == 0 && (w.req.Method != http.MethodHead || w.written > 0):
		w.length = w.written
		h["Content-Length"] = []string{strconv.FormatInt(w.written, 10)}
	case w.req.Method == http.MethodHead:
	default:
		w.chunked = true
		h["Transfer-Encoding"] = []string{"chunked"}
	}
	if w.closeAfter && !h1.HeaderHas(h["Connection"], "close") {
		h["Connection"] = []string{"close"}
	}
	w.bw.WriteString("HTTP/1.1 ")
	w.bw.WriteString(statusLine(w.status))
	writeHeaders(w.bw, h, w.trailers)
	if _, ok := h["Date"]; !ok { // written, not added to h: as net/http, which does not show it either
		w.bw.WriteString("Date: ")
		w.bw.Write(dateNow())
		w.bw.WriteString("\r\n")
	}
	_, err := w.bw.WriteString("\r\n")
	w.fail(err)
}

// Flush sends the head, if it is not out yet, and every byte written so far.
func (w *writer) Flush() { _ = w.FlushError() }

// FlushError is Flush with its error (http.ResponseController).
func (w *writer) FlushError() error {
	if w.done {
		return errAfterReturn
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.sent {
		held := w.held
		w.sendHead(false)
		w.held = nil
		if len(held) > 0 && w.req.Method != http.MethodHead {
			if _, err := w.writeBody(held); err != nil {
				return err
			}
		}
	}
	if w.err != nil {
		return w.err
	}
	err := w.bw.Flush()
	w.fail(err)
	return err
}

// SetReadDeadline and SetWriteDeadline are the connection's (http.ResponseController).
func (w *writer) SetReadDeadline(t time.Time) error  { return w.c.setReadDeadline(t) }
func (w *writer) SetWriteDeadline(t time.Time) error { return w.c.nc.SetWriteDeadline(t) }

// finish ends the answer once the handler returned: the head if it was held, the held body, the
// last chunk and the trailers. It reports whether the connection can carry another request.
func (w *writer) finish() bool {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	held := w.held
	w.sendHead(true)
	w.held = nil
	if len(held) > 0 && w.req.Method != http.MethodHead {
		_, _ = w.writeBody(held)
	}
	if w.chunked {
		w.bw.WriteString("0\r\n")
		w.writeTrailers()
		_, err := w.bw.WriteString("\r\n")
		w.fail(err)
	}
	w.done = true
	w.fail(w.bw.Flush())
	short := w.length >= 0 && w.written != w.length && w.req.Method != http.MethodHead && w.bodyAllowed()
	return w.err == nil && !w.closeAfter && !short
}

// writeTrailers writes the announced trailers that were set and the http.TrailerPrefix ones.
func (w *writer) writeTrailers() {
	t := http.Header{}
	for _, k := range w.trailers {
		if vv, ok := w.header[k]; ok {
			t[k] = vv
		}
	}
	for k, vv := range w.header {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			t[strings.TrimPrefix(k, http.TrailerPrefix)] = vv
		}
	}
	writeHeaders(w.bw, t, nil)
}

func (w *writer) fail(err error) {
	if err != nil && w.err == nil {
		w.err = err
	}
}

// statusLine is "CODE Reason\r\n".
func statusLine(code int) string {
	text := http.StatusText(code)
	text = cmp.Or(text, "status code "+strconv.Itoa(code))
	return strconv.Itoa(code) + " " + text + "\r\n"
}

// writeHeaders writes h as header lines, as net/http does: names that are not tokens are dropped,
// line breaks in values become spaces; the skip names (the announced trailers) and
// http.TrailerPrefix ones are not written here.
func writeHeaders(bw *bufio.Writer, h http.Header, skip []string) {
next:
	for k, vv := range h {
		if !h1.ValidName(k) {
			continue
		}
		for _, s := range skip {
			if s == k {
				continue next
			}
		}
		for _, v := range vv {
			bw.WriteString(k)
			bw.WriteString(": ")
			if h1.HasLineBreak(v) {
				v = strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
			}
			bw.WriteString(strings.TrimSpace(v))
			bw.WriteString("\r\n")
		}
	}
}

// dateLine is the Date of answers sent within one second.
type dateLine struct {
	sec int64
	b   []byte
}

// lastDate is the latest second's Date: formatting it for every answer was 1% of the router's CPU.
var lastDate atomic.Pointer[dateLine]

// dateNow is the Date of an answer sent now, in http.TimeFormat.
func dateNow() []byte {
	now := time.Now()
	d := lastDate.Load()
	if d == nil || d.sec != now.Unix() {
		d = &dateLine{sec: now.Unix(), b: now.UTC().AppendFormat(make([]byte, 0, len(http.TimeFormat)), http.TimeFormat)}
		lastDate.Store(d)
	}
	return d.b
}

// errAfterReturn answers a write to an answer whose handler returned.
var errAfterReturn = errors.New("front: write after the handler returned")

var _ interface {
	http.ResponseWriter
	http.Flusher
	SetReadDeadline(time.Time) error
} = (*writer)(nil)
