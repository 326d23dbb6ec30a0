package front

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// start serves h on a loopback port with the front and returns its address.
func start(t *testing.T, h http.Handler, o Options) (*Server, string) {
	t.Helper()
	o.Handler = h
	s := New(o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		_ = s.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, ln.Addr().String()
}

// echo answers with the method, path, body and whether the front served it.
func echo(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, byFront := w.(*writer)
	w.Header().Set("X-Front", fmt.Sprint(byFront))
	fmt.Fprintf(w, "%s %s %q", r.Method, r.URL.Path, b)
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	return c, bufio.NewReader(c)
}

func readResponse(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer's body: %v", err)
	}
	return resp, string(b)
}

func TestKeepAliveAndPipelining(t *testing.T) {
	s, addr := start(t, http.HandlerFunc(echo), Options{})
	c, br := dial(t, addr)
	req := "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}"
	// Three requests in one write: answered in order on the one connection.
	if _, err := io.WriteString(c, req+req+"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{`POST /v1/chat/completions "{}"`, `POST /v1/chat/completions "{}"`, `GET /health ""`} {
		resp, body := readResponse(t, br, "GET")
		if body != want || resp.Header.Get("X-Front") != "true" || resp.ContentLength != int64(len(want)) || resp.Close {
			t.Fatalf("answer %d: %q %v, length %d, close %v", i, body, resp.Header, resp.ContentLength, resp.Close)
		}
		if resp.Header.Get("Date") == "" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("answer %d lacks net/http's Date or sniffed type: %v", i, resp.Header)
		}
	}
	if n := s.handedN.Load(); n != 0 {
		t.Fatalf("%d connections handed to net/http", n)
	}
}

// TestOddRequestsGoToNetHTTP checks that the heads the front does not read itself are answered by
// net/http on the same connection, with what the front had read of them.
func TestOddRequestsGoToNetHTTP(t *testing.T) {
	for name, tc := range map[string]struct {
		in, want string
		status   int
	}{
		"chunked body": {"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", `POST /x "abc"`, 200},
		"HTTP/1.0":     {"POST /x HTTP/1.0\r\nHost: a\r\nContent-Length: 1\r\n\r\nz", `POST /x "z"`, 200},
		"smuggling":    {"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\nContent-Length: 5\r\n\r\nabcdef", "", 400},
		"no host":      {"GET /x HTTP/1.1\r\n\r\n", "", 400},
		"bare LF":      {"GET /x HTTP/1.1\nHost: a\n\n", `GET /x ""`, 200},
	} {
		t.Run(name, func(t *testing.T) {
			s, addr := start(t, http.HandlerFunc(echo), Options{})
			c, br := dial(t, addr)
			if _, err := io.WriteString(c, tc.in); err != nil {
				t.Fatal(err)
			}
			resp, body := readResponse(t, br, "GET")
			if resp.StatusCode != tc.status || tc.status == 200 && (body != tc.want || resp.Header.Get("X-Front") != "false") {
				t.Fatalf("%d %q %v", resp.StatusCode, body, resp.Header)
			}
			if n := s.handedN.Load(); n != 1 {
				t.Fatalf("%d connections handed to net/http, want 1", n)
			}
		})
	}
}

func TestExpectContinueIsNetHTTPs(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(echo), Options{})
	c, br := dial(t, addr)
	io.WriteString(c, "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("%q %v, want 100 Continue", line, err)
	}
	br.ReadString('\n') // the blank line
	io.WriteString(c, "ok")
	if _, body := readResponse(t, br, "POST"); body != `POST /x "ok"` {
		t.Fatalf("%q", body)
	}
}

func TestClientLeavingCancelsTheRequest(t *testing.T) {
	cancelled := make(chan error, 1)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		<-r.Context().Done()
		cancelled <- context.Cause(r.Context())
	}), Options{})
	c, _ := dial(t, addr)
	io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}")
	c.Close() // before or after the sweeper's look: either way the watch reads the close
	select {
	case err := <-cancelled:
		if !errors.Is(err, errClientGone) {
			t.Fatalf("cause %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request's context was not cancelled when its client left")
	}
}

func TestStreamFlushesAndChunks(t *testing.T) {
	next := make(chan struct{})
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Trailer", "X-Sum")
		for i := 0; i < 3; i++ {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			<-next // the client has read the event before the next is written
		}
		w.Header().Set("X-Sum", "3")
	}), Options{})
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("transfer encoding %v", resp.TransferEncoding)
	}
	br := bufio.NewReader(resp.Body)
	for i := 0; i < 3; i++ {
		line, err := br.ReadString('\n')
		if err != nil || line != fmt.Sprintf("data: %d\n", i) {
			t.Fatalf("event %d: %q %v", i, line, err)
		}
		br.ReadString('\n')
		next <- struct{}{}
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the events: %q %v", rest, err)
	}
	if resp.Trailer.Get("X-Sum") != "3" {
		t.Fatalf("trailer %v", resp.Trailer)
	}
}

func TestAnswersAsNetHTTPFrames(t *testing.T) {
	big := strings.Repeat("x", 3*bufferBeforeChunking)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			io.WriteString(w, big)
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
			if _, err := io.WriteString(w, "x"); !errors.Is(err, http.ErrBodyNotAllowed) {
				panic(err)
			}
		case "/declared":
			w.Header().Set("Content-Length", "3")
			io.WriteString(w, "abc")
			if _, err := io.WriteString(w, "d"); !errors.Is(err, http.ErrContentLength) {
				panic(err)
			}
		case "/short": // declares more than it writes: the connection cannot go on
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "abc")
		case "/abort":
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "abc")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		case "/head":
			io.WriteString(w, "hello")
		case "/html":
			io.WriteString(w, "<html></html>")
		}
	}), Options{})
	get := func(method, path string) (*http.Response, string, error) {
		req, _ := http.NewRequest(method, "http://"+addr+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, string(b), err
	}
	if resp, body, err := get("GET", "/big"); err != nil || body != big || resp.ContentLength != -1 {
		t.Fatalf("big: %v %d %v", err, len(body), resp)
	}
	if resp, body, err := get("GET", "/empty"); err != nil || resp.StatusCode != 204 || body != "" {
		t.Fatalf("empty: %v %q", err, body)
	}
	if resp, body, err := get("GET", "/declared"); err != nil || body != "abc" || resp.ContentLength != 3 {
		t.Fatalf("declared: %v %q", err, body)
	}
	if _, _, err := get("GET", "/short"); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short: %v, want a cut answer", err)
	}
	if _, _, err := get("GET", "/abort"); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("abort: %v, want a cut answer", err)
	}
	if resp, body, err := get("HEAD", "/head"); err != nil || body != "" || resp.ContentLength != 5 || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("head: %v %q %d %v", err, body, resp.ContentLength, resp.Header)
	}
	// The same bytes as net/http answers them: a HEAD answer's type is sniffed from what the
	// handler wrote, and nothing follows its head on the connection.
	c, br := dial(t, addr)
	io.WriteString(c, "HEAD /html HTTP/1.1\r\nHost: a\r\n\r\nGET /declared HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, _ := readResponse(t, br, "HEAD"); resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || resp.ContentLength != 13 {
		t.Fatalf("head of html: %v", resp.Header)
	}
	if _, body := readResponse(t, br, "GET"); body != "abc" {
		t.Fatalf("after a HEAD answer: %q", body)
	}
}

func TestUnreadBodyEndsTheConnection(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized) // answers without reading the body
	}), Options{})
	c, br := dial(t, addr)
	io.WriteString(c, "POST /v1/completions HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nabcdeGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, _ := readResponse(t, br, "POST")
	if resp.StatusCode != 401 || !resp.Close {
		t.Fatalf("%d close %v", resp.StatusCode, resp.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after the answer: %v, want the connection closed (the next request is not served)", err)
	}
}

func TestTimeouts(t *testing.T) {
	_, addr := start(t, http.HandlerFunc(echo), Options{ReadHeaderTimeout: 200 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
	slow, sbr := dial(t, addr)
	io.WriteString(slow, "GET /x HTTP/1.1\r\nHost: a\r\n") // and never the blank line
	if _, err := sbr.ReadByte(); err != io.EOF {
		t.Fatalf("a late head: %v, want the connection closed", err)
	}
	idle, ibr := dial(t, addr)
	io.WriteString(idle, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
	readResponse(t, ibr, "GET")
	if _, err := ibr.ReadByte(); err != io.EOF {
		t.Fatalf("an idle connection: %v, want it closed", err)
	}
}

func TestShutdownWaitsForAnswers(t *testing.T) {
	release := make(chan struct{})
	in := make(chan struct{})
	s, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(in)
			<-release
		}
		io.WriteString(w, "done")
	}), Options{})
	idle, ibr := dial(t, addr)
	io.WriteString(idle, "GET /fast HTTP/1.1\r\nHost: a\r\n\r\n")
	readResponse(t, ibr, "GET")
	busy, bbr := dial(t, addr)
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
	<-in
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	if _, err := ibr.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection at shutdown: %v, want it closed", err)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a request ran", err)
	default:
	}
	close(release)
	resp, body := readResponse(t, bbr, "GET")
	if body != "done" || !resp.Close {
		t.Fatalf("%q close %v", body, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
}

// TestSweeperArmsOnlyWhileListed: the sweeper's timer is armed while a request is listed and
// stopped when the last one is taken off, so that quick answers never wake it; a sweep re-arms it
// for a request not yet due.
func TestSweeperArmsOnlyWhileListed(t *testing.T) {
	var s sweeper
	a, b := &conn{}, &conn{}
	s.add(a)
	s.add(b)
	s.remove(a)
	if !s.armed {
		t.Fatal("the timer was stopped with a request still listed")
	}
	s.remove(b)
	if s.armed {
		t.Fatal("the timer is armed with nothing listed")
	}
	s.add(a)
	s.sweep() // a is not due yet: it stays listed, and the timer is set again for it
	s.mu.Lock()
	_, listed := s.listed[a]
	armed := s.armed
	s.mu.Unlock()
	if !listed || !armed {
		t.Fatalf("after an early sweep: listed %v, armed %v", listed, armed)
	}
	s.remove(a)
}

func TestDateNow(t *testing.T) {
	before := time.Now().Truncate(time.Second)
	got, err := http.ParseTime(string(dateNow()))
	after := time.Now()
	if err != nil || got.Before(before) || got.After(after) {
		t.Fatalf("Date %q (%v), want between %v and %v", dateNow(), err, before, after)
	}
	if a, b := dateNow(), dateNow(); &a[0] != &b[0] && string(a) == string(b) {
		t.Fatalf("the same second's Date formatted twice")
	}
}
