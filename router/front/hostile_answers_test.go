package front

// More hostile-client tests (hostile_test.go): many connections, half closes, panics, odd writes and
// framing, 1xx answers, trailers, shutdown, closes with input unread, response splitting.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHostileManyConnections opens many connections at once, each with requests the front serves
// and one it hands to net/http, all pipelined.
func TestHostileManyConnections(t *testing.T) {
	s, addr := start(t, http.HandlerFunc(echo), Options{ReadHeaderTimeout: 5 * time.Second, ErrorLog: quietLog})
	const n = 48
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			body := fmt.Sprintf(`{"conn":%d}`, i)
			req := fmt.Sprintf("POST /c%d HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n%s", i, len(body), body)
			tail := fmt.Sprintf("GET /g%d HTTP/1.1\r\nHost: a\r\n\r\n", i)
			if i%4 == 0 { // the last one goes to net/http
				tail = fmt.Sprintf("GET /old%d HTTP/1.0\r\n\r\n", i)
			}
			if _, err := io.WriteString(c, req+req+tail); err != nil {
				errs <- err
				return
			}
			br := bufio.NewReader(c)
			want := []string{fmt.Sprintf("POST /c%d %q", i, body), fmt.Sprintf("POST /c%d %q", i, body), fmt.Sprintf("GET /g%d \"\"", i)}
			if i%4 == 0 {
				want[2] = fmt.Sprintf("GET /old%d \"\"", i)
			}
			for j, w := range want {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					errs <- fmt.Errorf("conn %d answer %d: %w", i, j, err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				if err != nil || string(b) != w {
					errs <- fmt.Errorf("conn %d answer %d: %q %v, want %q", i, j, b, err, w)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := s.handedN.Load(); got != n/4 {
		t.Errorf("%d connections handed to net/http, want %d", got, n/4)
	}
}

// TestHostileHalfClose sends a request and half-closes the connection before the answer. Both
// servers read the half-close as the client leaving (the request's context ends) and still send the
// answer on the open half: the front must match net/http in both.
func TestHostileHalfClose(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		timeout := time.NewTimer(2 * time.Second) // a fallback only: the context ends long before
		defer timeout.Stop()
		select {
		case <-r.Context().Done():
			fmt.Fprintf(w, "%s cancelled", r.Method)
		case <-timeout.C:
			fmt.Fprintf(w, "%s served", r.Method)
		}
	})
	front, plain := startBoth(t, h, Options{})
	for _, raw := range []string{
		"GET /a HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}",
	} {
		got, want := exchange(t, front, raw, 0), exchange(t, plain, raw, 0)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%q\nfront:    %q\nnet/http: %q", raw, got, want)
		}
		if len(got) != 2 || !strings.HasPrefix(got[0], "200 ") {
			t.Errorf("%q: the answer did not arrive on the open half: %q", raw, got)
		}
	}
}

// TestHostilePanic: a handler's panic closes its connection without an answer (as net/http's),
// drops what was pipelined after it, and leaves the server serving; a panic in the middle of a
// streamed answer cuts it.
func TestHostilePanic(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/panic":
			w.Header().Set("X-A", "1")
			io.WriteString(w, "partial")
			panic("boom")
		case "/panic-streaming":
			io.WriteString(w, strings.Repeat("s", 3000))
			w.(http.Flusher).Flush()
			panic("boom")
		case "/panic-body":
			panic(fmt.Errorf("boom with a body of %d", r.ContentLength))
		}
		echo(w, r)
	})
	front, plain := startBoth(t, h, Options{})
	for _, raw := range []string{
		"GET /panic HTTP/1.1\r\nHost: a\r\n\r\nGET /after HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /ok HTTP/1.1\r\nHost: a\r\n\r\nGET /panic-streaming HTTP/1.1\r\nHost: a\r\n\r\nGET /after HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /panic-body HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nabcdeGET /after HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		got, want := exchange(t, front, raw, 0), exchange(t, plain, raw, 0)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%q\nfront:    %q\nnet/http: %q", raw, got, want)
		}
		for _, a := range got {
			if strings.Contains(a, "/after") {
				t.Errorf("a request pipelined after a panic was served: %q", got)
			}
		}
	}
	// The server goes on.
	if got := exchange(t, front, "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n", 0); len(got) != 2 || got[0] != `200 "GET /ok \"\"" close=false` {
		t.Errorf("after the panics: %q", got)
	}
}

// TestHostileWritesAfterFlush: a handler that flushes, writes more, flushes again, writes past the
// chunking threshold and calls WriteHeader late: the answer is chunked and whole, and the
// connection carries the next request.
func TestHostileWritesAfterFlush(t *testing.T) {
	big := strings.Repeat("b", 3*bufferBeforeChunking)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stream":
			io.WriteString(w, "a")
			w.(http.Flusher).Flush()
			io.WriteString(w, "b")
			w.(http.Flusher).Flush()
			w.(http.Flusher).Flush() // nothing new: an empty chunk must not be sent (it would end the body)
			w.Write(nil)
			io.WriteString(w, big)
			w.WriteHeader(http.StatusTeapot) // too late: ignored
			io.WriteString(w, "z")
		case "/declared":
			w.Header().Set("Content-Length", "4")
			io.WriteString(w, "ab")
			w.(http.Flusher).Flush()
			io.WriteString(w, "cd")
			if _, err := io.WriteString(w, "e"); !errors.Is(err, http.ErrContentLength) {
				panic(fmt.Sprintf("a write past the declared length: %v", err))
			}
		case "/head-flush":
			w.Header().Set("Content-Type", "text/plain")
			w.(http.Flusher).Flush()
			io.WriteString(w, "ignored on a HEAD")
		default:
			echo(w, r)
		}
	})
	front, plain := startBoth(t, h, Options{})
	for _, addr := range []string{front, plain} {
		c, br := dial(t, addr)
		io.WriteString(c, "GET /stream HTTP/1.1\r\nHost: a\r\n\r\n"+
			"HEAD /head-flush HTTP/1.1\r\nHost: a\r\n\r\nGET /last HTTP/1.1\r\nHost: a\r\n\r\n")
		resp, body := readResponse(t, br, "GET")
		if resp.StatusCode != 200 || body != "ab"+big+"z" || len(resp.TransferEncoding) != 1 || resp.Close {
			t.Errorf("%s: stream %d %d bytes %v close=%v", addr, resp.StatusCode, len(body), resp.TransferEncoding, resp.Close)
		}
		if resp, body := readResponse(t, br, "HEAD"); body != "" || resp.StatusCode != 200 || resp.Close {
			t.Errorf("%s: flushed HEAD %d %q close=%v", addr, resp.StatusCode, body, resp.Close)
		}
		if _, body := readResponse(t, br, "GET"); body != `GET /last ""` {
			t.Errorf("%s: after them: %q", addr, body)
		}
	}
	// A declared length written in two flushed parts, then a write past it (refused): the front
	// keeps the connection, the length having been met. (net/http closes it here.)
	c, br := dial(t, front)
	io.WriteString(c, "GET /declared HTTP/1.1\r\nHost: a\r\n\r\nGET /last HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, body := readResponse(t, br, "GET"); body != "abcd" || resp.ContentLength != 4 || resp.Close {
		t.Errorf("declared %q %d close=%v", body, resp.ContentLength, resp.Close)
	}
	if _, body := readResponse(t, br, "GET"); body != `GET /last ""` {
		t.Errorf("after the declared answer: %q", body)
	}
}

// TestHostileHEADWithBody sends HEAD requests with bodies, pipelined: the body is read and dropped as
// a body (not as the next request), the answer has a head only, and its Content-Length is as
// net/http gives it.
func TestHostileHEADWithBody(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/nothing":
			io.Copy(io.Discard, r.Body)
		case "/big":
			io.Copy(io.Discard, r.Body)
			io.WriteString(w, strings.Repeat("x", 5000))
		default:
			echo(w, r)
		}
	})
	front, plain := startBoth(t, h, Options{})
	raw := "HEAD /h HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello" +
		"HEAD /nothing HTTP/1.1\r\nHost: a\r\nContent-Length: 35\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n" +
		"HEAD /big HTTP/1.1\r\nHost: a\r\n\r\n" +
		"GET /next HTTP/1.1\r\nHost: a\r\n\r\n"
	answers := func(addr string) []string {
		c, br := dial(t, addr)
		io.WriteString(c, raw)
		var out []string
		for _, m := range []string{"HEAD", "HEAD", "HEAD", "GET"} {
			resp, body := readResponse(t, br, m)
			out = append(out, fmt.Sprintf("%d length=%d %q close=%v", resp.StatusCode, resp.ContentLength, body, resp.Close))
		}
		return out
	}
	got, want := answers(front), answers(plain)
	if got[0] != want[0] || got[1] != want[1] || got[3] != want[3] {
		t.Errorf("front:    %q\nnet/http: %q", got, want)
	}
	if got[3] != `200 length=12 "GET /next \"\"" close=false` {
		t.Errorf("after the HEADs: %q", got[3])
	}
	if got[2] != want[2] {
		// A HEAD whose handler writes more than net/http buffers: net/http sends its head with no
		// length; the front holds it to the end and gives the length. Both are valid; logged.
		t.Logf("HEAD of a large answer: front %q, net/http %q", got[2], want[2])
	}
}

// readRawHead reads one answer's head, status line and header lines, raw.
func readRawHead(t *testing.T, tp *textproto.Reader) (string, textproto.MIMEHeader) {
	t.Helper()
	line, err := tp.ReadLine()
	if err != nil {
		t.Fatalf("status line: %v", err)
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		t.Fatalf("headers: %v", err)
	}
	return line, h
}

// TestHostileInformational: 1xx answers (WriteHeader(103), twice, then the real one) go out at once,
// with the headers set so far but none of the framing ones, as net/http's.
func TestHostileInformational(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.Header().Set("Content-Length", "3")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "abc")
	})
	front, plain := startBoth(t, h, Options{})
	for _, tc := range []struct{ name, addr string }{{"net/http", plain}, {"front", front}} {
		c, br := dial(t, tc.addr)
		io.WriteString(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n")
		tp := textproto.NewReader(br)
		for i := 0; i < 2; i++ {
			line, hdr := readRawHead(t, tp)
			if line != "HTTP/1.1 103 Early Hints" || hdr.Get("Link") == "" {
				t.Errorf("%s: informational answer %d: %q %v", tc.name, i, line, hdr)
			}
			if _, ok := hdr["Content-Length"]; ok {
				t.Errorf("%s: informational answer %d carries the final answer's Content-Length: %v", tc.name, i, hdr)
			}
		}
		// The final answer follows the two 103s; http.ReadResponse skips none of them here.
		resp, body := readResponse(t, br, "GET")
		if resp.StatusCode != 201 || body != "abc" || resp.Header.Get("Link") != "" {
			t.Errorf("%s: final answer %d %q %v", tc.name, resp.StatusCode, body, resp.Header)
		}
		// The pipelined request gets the same, on the same connection.
		for i := 0; i < 2; i++ {
			if line, _ := readRawHead(t, tp); line != "HTTP/1.1 103 Early Hints" {
				t.Errorf("%s: second request's informational answer %d: %q", tc.name, i, line)
			}
		}
		if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 201 || body != "abc" {
			t.Errorf("%s: second answer %d %q", tc.name, resp.StatusCode, body)
		}
	}
}

// TestHostileTrailerPrefix: http.TrailerPrefix trailers set as the handler ends. On a short answer
// (its body still held when the handler returns) net/http sends a Content-Length and drops them; on
// a flushed (chunked) one it sends them. The front must do the same: same framing, same trailers.
func TestHostileTrailerPrefix(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hi")
		if r.URL.Path == "/flushed" {
			w.(http.Flusher).Flush()
		}
		w.Header().Set(http.TrailerPrefix+"X-Checksum", "42")
	})
	front, plain := startBoth(t, h, Options{})
	for _, path := range []string{"/short", "/flushed"} {
		var answers []string
		for _, addr := range []string{front, plain} {
			c, br := dial(t, addr)
			io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: a\r\n\r\n")
			resp, body := readResponse(t, br, "GET")
			answers = append(answers, fmt.Sprintf("%q length=%d te=%v trailer=%v", body, resp.ContentLength, resp.TransferEncoding, resp.Trailer))
		}
		if answers[0] != answers[1] {
			t.Errorf("%s: front %s, net/http %s", path, answers[0], answers[1])
		}
		if path == "/flushed" && !strings.Contains(answers[0], "X-Checksum:[42]") {
			t.Errorf("%s: the trailer was not sent: %s", path, answers[0])
		}
	}
}

// TestHostileShutdownInFlight: Shutdown waits for a request whose body is still arriving, and for a
// request handed to net/http, answers both with Connection: close, and returns once they are done.
func TestHostileShutdownInFlight(t *testing.T) {
	release := make(chan struct{})
	inOld, inHalf := make(chan struct{}), make(chan struct{})
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/old":
			close(inOld)
			<-release
		case "/half":
			close(inHalf)
		}
		echo(w, r)
	}), Options{ErrorLog: quietLog})
	idle, ibr := dial(t, addr)
	io.WriteString(idle, "GET /idle HTTP/1.1\r\nHost: a\r\n\r\n")
	readResponse(t, ibr, "GET")
	// A body half sent, and a request net/http serves, in flight.
	half, hbr := dial(t, addr)
	io.WriteString(half, "POST /half HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\n\r\nabc")
	old, obr := dial(t, addr)
	io.WriteString(old, "GET /old HTTP/1.0\r\n\r\n")
	<-inOld
	<-inHalf // its handler is reading the body
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	if _, err := ibr.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection at shutdown: %v, want it closed", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if n, _ := c.Read(make([]byte, 1)); n > 0 {
			t.Errorf("a connection after Shutdown began was served")
		}
		c.Close()
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with requests in flight", err)
	default:
	}
	io.WriteString(half, "def")
	resp, body := readResponse(t, hbr, "POST")
	if body != `POST /half "abcdef"` || !resp.Close {
		t.Errorf("the half-sent request: %q close=%v", body, resp.Close)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) with net/http's request in flight", err)
	default:
	}
	close(release)
	resp, body = readResponse(t, obr, "GET")
	if body != `GET /old ""` || !resp.Close {
		t.Errorf("the handed request: %q close=%v", body, resp.Close)
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return once the requests were answered")
	}
}

// TestHostileShutdownWithAHalfHead: a keep-alive connection whose next head is only partly in when
// Shutdown begins holds no request yet. net/http counts it idle and closes it; the front must not
// wait for that head (with ReadHeaderTimeout 0, forever).
func TestHostileShutdownWithAHalfHead(t *testing.T) {
	for _, name := range []string{"net/http", "front"} {
		t.Run(name, func(t *testing.T) {
			var shutdown func(context.Context) error
			var addr string
			if name == "front" {
				var s *Server
				s, addr = start(t, http.HandlerFunc(echo), Options{})
				shutdown = s.Shutdown
			} else {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				s := &http.Server{Handler: http.HandlerFunc(echo), ErrorLog: quietLog}
				go s.Serve(ln)
				t.Cleanup(func() { s.Close() })
				addr, shutdown = ln.Addr().String(), s.Shutdown
			}
			c, br := dial(t, addr)
			// The second head's first part comes with the first request: it is read with it.
			io.WriteString(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n")
			readResponse(t, br, "GET")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // with RHT 0 the bug waited forever
			defer cancel()
			if err := shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v; a connection with half a head held it", err)
			}
		})
	}
}

// TestHostileShutdownDeadline: Shutdown gives up when its context ends with a handler still running,
// and Close then ends that handler's connection.
func TestHostileShutdownDeadline(t *testing.T) {
	in := make(chan struct{})
	gone := make(chan struct{})
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(in)
		<-r.Context().Done() // the client's leaving (Close closes the connection) ends it
		close(gone)
	}), Options{})
	c, br := dial(t, addr)
	io.WriteString(c, "GET /forever HTTP/1.1\r\nHost: a\r\n\r\n")
	<-in
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a handler running: %v, want the context's deadline", err)
	}
	s.Close()
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the connection was not closed by Close")
	}
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context did not end after Close")
	}
}

// TestHostileCloseWithInputUnread: a request with Connection: close followed by more input than the
// front's buffer holds. The front closes after the answer with input unread, which resets the
// connection; the answer must still reach the client (net/http half-closes and waits first).
func TestHostileCloseWithInputUnread(t *testing.T) {
	front, plain := startBoth(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "answer")
	}), Options{})
	junk := "POST /more HTTP/1.1\r\nHost: a\r\nContent-Length: 200000\r\n\r\n" + strings.Repeat("j", 200000)
	for _, tc := range []struct{ name, addr string }{{"net/http", plain}, {"front", front}} {
		t.Run(tc.name, func(t *testing.T) {
			lost := 0
			for i := 0; i < 5; i++ {
				c, br := dial(t, tc.addr)
				go io.WriteString(c, "GET /a HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"+junk)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					lost++
					t.Logf("try %d: the answer was lost: %v", i, err)
					continue
				}
				if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "answer" {
					lost++
					t.Logf("try %d: the answer was cut: %q %v", i, b, err)
				}
			}
			if lost > 0 {
				t.Errorf("%s: %d answers of 5 lost to the connection's reset", tc.name, lost)
			}
		})
	}
}

// TestHostileResponseSplitting: a handler that puts line breaks in header values, or odd bytes in
// names, cannot split the answer: the front writes what net/http writes.
func TestHostileResponseSplitting(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Evil", "a\r\nSet-Cookie: injected=1\r\n\r\nHTTP/1.1 200 OK")
		w.Header().Set("X-Lf", "b\nContent-Length: 0")
		w.Header()["Bad Name"] = []string{"c"}
		w.Header()["Bad:Name"] = []string{"d"}
		w.Header()["X-Spaces"] = []string{"  padded  "}
		io.WriteString(w, "body")
	})
	front, plain := startBoth(t, h, Options{})
	var seen []string
	for _, addr := range []string{front, plain} {
		c, br := dial(t, addr)
		io.WriteString(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n")
		var out []string
		for i := 0; i < 2; i++ {
			resp, body := readResponse(t, br, "GET")
			resp.Header.Del("Date")
			out = append(out, fmt.Sprintf("%d %q %v", resp.StatusCode, body, resp.Header))
			if resp.Header.Get("Set-Cookie") != "" || body != "body" {
				t.Errorf("%s: the answer was split: %v %q", addr, resp.Header, body)
			}
		}
		seen = append(seen, strings.Join(out, "\n"))
	}
	if seen[0] != seen[1] {
		t.Errorf("front:\n%s\nnet/http:\n%s", seen[0], seen[1])
	}
}
