package front

// Hostile-client tests: each attacks the front over real TCP sockets and, where the front claims
// to behave as net/http does, sends the same bytes to a plain net/http server with the same
// handler and compares what comes back.

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// quietLog is net/http's error log in these tests: the attacks make it talk.
var quietLog = log.New(io.Discard, "", 0)

// startNetHTTP serves h with a plain net/http server with the front's options, for comparison.
func startNetHTTP(t *testing.T, h http.Handler, o Options) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &http.Server{Handler: h, ReadHeaderTimeout: o.ReadHeaderTimeout, IdleTimeout: o.IdleTimeout, ErrorLog: quietLog}
	done := make(chan struct{})
	go func() { _ = s.Serve(ln); close(done) }()
	t.Cleanup(func() { _ = s.Close(); <-done })
	return ln.Addr().String()
}

// startBoth serves h with the front and with net/http.
func startBoth(t *testing.T, h http.Handler, o Options) (front, plain string) {
	t.Helper()
	o.ErrorLog = quietLog
	_, front = start(t, h, o)
	return front, startNetHTTP(t, h, o)
}

// exchange sends raw (in pieces when split > 0), half-closes, and reads every answer until the
// server closes: one line per answer (status, body, whether it announced a close), then how the
// connection ended. Requests are read as GETs (no HEAD in raw).
func exchange(t *testing.T, addr, raw string, split int) []string {
	t.Helper()
	c, br := dial(t, addr)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	go func() {
		if split <= 0 {
			_, _ = io.WriteString(c, raw)
		} else {
			for s := raw; s != ""; {
				n := min(split, len(s))
				if _, err := io.WriteString(c, s[:n]); err != nil {
					return
				}
				s = s[n:]
			}
		}
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	var out []string
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			var ne net.Error
			switch {
			case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err):
				out = append(out, "closed")
			case errors.As(err, &ne) && ne.Timeout():
				out = append(out, "timeout (connection left open)")
			default:
				out = append(out, "bad answer: "+err.Error())
			}
			return out
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			out = append(out, fmt.Sprintf("%d cut body %q: %v", resp.StatusCode, b, err))
			return out
		}
		out = append(out, fmt.Sprintf("%d %q close=%v", resp.StatusCode, b, resp.Close))
	}
}

func isReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}

// TestHostileSmugglingMatchesNetHTTP sends request-smuggling attempts and odd heads to the front
// and to net/http: every answer, and where the connection ends, must be the same. The echo handler
// names each request it serves, so a request read out of another's body shows.
func TestHostileSmugglingMatchesNetHTTP(t *testing.T) {
	front, plain := startBoth(t, http.HandlerFunc(echo), Options{})
	const next = "GET /next HTTP/1.1\r\nHost: a\r\n\r\n"
	const smuggled = "GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n"
	post := func(lines ...string) string {
		return "POST /a HTTP/1.1\r\nHost: a\r\n" + strings.Join(lines, "") + "\r\n"
	}
	cases := map[string]string{
		"CL then TE":             post("Content-Length: 4\r\n", "Transfer-Encoding: chunked\r\n") + "0\r\n\r\n" + smuggled + next,
		"TE then CL":             post("Transfer-Encoding: chunked\r\n", "Content-Length: 40\r\n") + "0\r\n\r\n" + smuggled + next,
		"TE chunked, identity":   post("Transfer-Encoding: chunked, identity\r\n") + "3\r\nabc\r\n0\r\n\r\n" + next,
		"TE with a space":        post("Transfer-Encoding : chunked\r\n", "Content-Length: 5\r\n") + "0\r\n\r\n" + next,
		"TE xchunked":            post("Transfer-Encoding: xchunked\r\n") + "0\r\n\r\n" + next,
		"Transfer_Encoding":      post("Transfer_Encoding: chunked\r\n", "Content-Length: 5\r\n") + "0\r\n\r\n" + next,
		"two equal lengths":      post("Content-Length: 5\r\n", "Content-Length: 5\r\n") + "abcde" + next,
		"two lengths":            post("Content-Length: 5\r\n", "Content-Length: 0\r\n") + "abcde" + next,
		"length list":            post("Content-Length: 5, 5\r\n") + "abcde" + next,
		"length with a sign":     post("Content-Length: +5\r\n") + "abcde" + next,
		"negative length":        post("Content-Length: -1\r\n") + "abcde" + next,
		"length in tabs":         post("Content-Length:\t5\t\r\n") + "abcde" + next,
		"length with zeros":      post("Content-Length: 0005\r\n") + "abcde" + next,
		"length of 19 digits":    post("Content-Length: 0000000000000000005\r\n") + "abcde" + next,
		"length folded":          post("Content-Length:\r\n 5\r\n") + "abcde" + next,
		"header folded":          post("X-A: 1\r\n 2\r\n", "Content-Length: 5\r\n") + "abcde" + next,
		"bare CR in a value":     post("X-A: 1\r2\r\n", "Content-Length: 5\r\n") + "abcde" + next,
		"bare CR before CRLF":    post("Content-Length: 5\r\r\n") + "abcde" + next,
		"bare LF header line":    "POST /a HTTP/1.1\r\nHost: a\nContent-Length: 5\r\n\r\nabcde" + next,
		"bare LF blank line":     "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\nabcde" + next,
		"LF CRLF blank line":     "GET /a HTTP/1.1\r\nHost: a\n\r\n" + next,
		"CRLF LF then a header":  "GET /a HTTP/1.1\r\nHost: a\r\n\nContent-Length: 5\r\n\r\nabcde" + next,
		"NUL in a value":         post("X-A: 1\x002\r\n", "Content-Length: 5\r\n") + "abcde" + next,
		"NUL in a name":          post("X\x00A: 1\r\n", "Content-Length: 5\r\n") + "abcde" + next,
		"NUL in the target":      "GET /a\x00b HTTP/1.1\r\nHost: a\r\n\r\n" + next,
		"escaped NUL in target":  "GET /a%00b HTTP/1.1\r\nHost: a\r\n\r\n" + next,
		"fragment in target":     "GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n" + next,
		"double slash target":    "GET //evil.example/a HTTP/1.1\r\nHost: a\r\n\r\n" + next,
		"obs-text in a value":    post("X-A: \xff\r\n", "Content-Length: 5\r\n") + "abcde" + next,
		"DEL in a value":         post("X-A: \x7f\r\n", "Content-Length: 5\r\n") + "abcde" + next,
		"space before colon":     post("Content-Length : 5\r\n") + "abcde" + next,
		"two hosts":              "GET /a HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n" + next,
		"host and HOST":          "GET /a HTTP/1.1\r\nHost: a\r\nHOST: a\r\n\r\n" + next,
		"host with a space":      "GET /a HTTP/1.1\r\nHost: a b\r\n\r\n" + next,
		"host with an at":        "GET /a HTTP/1.1\r\nHost: u@a\r\n\r\n" + next,
		"host half an IPv6":      "GET /a HTTP/1.1\r\nHost: [::1\r\n\r\n" + next,
		"no host":                "GET /a HTTP/1.1\r\n\r\n" + next,
		"first header indented":  "GET /a HTTP/1.1\r\n Host: a\r\n\r\n" + next,
		"two spaces":             "GET  /a HTTP/1.1\r\nHost: a\r\n\r\n" + next,
		"trailing space":         "GET /a HTTP/1.1 \r\nHost: a\r\n\r\n" + next,
		"lower-case version":     "GET /a http/1.1\r\nHost: a\r\n\r\n" + next,
		"HTTP/1.2":               "GET /a HTTP/1.2\r\nHost: a\r\n\r\n" + next,
		"absolute form":          "GET http://a/x HTTP/1.1\r\nHost: b\r\n\r\n" + next,
		"upgrade":                "GET /a HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n" + next,
		"expect something else":  post("Expect: 200-ok\r\n", "Content-Length: 5\r\n") + "abcde" + next,
		"body holds a request":   post("Content-Length: 35\r\n") + smuggled + next,
		"pipelined after a body": post("Content-Length: 5\r\n") + "abcde" + post("Content-Length: 1\r\n") + "z" + next,
		"CRLF after a POST":      post("Content-Length: 5\r\n") + "abcde\r\n" + next,
		"two CRLF after a POST":  post("Content-Length: 5\r\n") + "abcde\r\n\r\n" + next,
		"CRLF after a GET":       "GET /a HTTP/1.1\r\nHost: a\r\n\r\n\r\n" + next,
		"leading CRLF":           "\r\n" + next,
		"length on a GET":        "GET /a HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nabcde" + next,
		"close then more":        "GET /a HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, close\r\n\r\n" + next,
		"body shorter, then EOF": post("Content-Length: 10\r\n") + "abc",
		"head cut, then EOF":     "GET /a HTTP/1.1\r\nHost: a\r\n",
		"HTTP/1.0 keep-alive":    "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + next,
		"served then handed":     next + "GET /old HTTP/1.0\r\n\r\n",
		"garbage":                "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
	}
	// Where the front differs from net/http on purpose, what it answers instead.
	differs := map[string][]string{
		// The front announces the close its unread body forces; net/http closes unannounced.
		"body shorter, then EOF": {`400 "unexpected EOF\n" close=true`, "closed"},
		// A head cut by the client's EOF: net/http answers 400 to the half-closed client; the
		// front, which never parsed it, just closes (harmless: the client stopped sending).
		"head cut, then EOF": {"closed"},
		"garbage":            {"closed"},
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			got, want := exchange(t, front, raw, 0), exchange(t, plain, raw, 0)
			if d, ok := differs[name]; ok {
				if strings.Join(got, "\n") != strings.Join(d, "\n") {
					t.Errorf("%q\nfront:    %q, want %q (net/http: %q)", raw, got, d, want)
				}
				return
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%q\nfront:    %q\nnet/http: %q", raw, got, want)
			}
			for _, a := range got {
				if strings.HasPrefix(a, `200 "GET /smuggled`) && name == "body holds a request" {
					t.Errorf("a request was read out of another's body: %q", got)
				}
			}
		})
	}
}

// TestHostileHeadInTinyWrites sends requests a few bytes a write (Go's sockets do not delay small
// writes): the front must piece the heads and bodies together as net/http does.
func TestHostileHeadInTinyWrites(t *testing.T) {
	front, plain := startBoth(t, http.HandlerFunc(echo), Options{ReadHeaderTimeout: 5 * time.Second})
	raw := "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\nX-Long: " + strings.Repeat("v", 300) + "\r\n\r\n{\"a\":1}" +
		"GET /b HTTP/1.1\r\nHost: a\r\n\r\n" + "GET /c HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
	for _, split := range []int{1, 3, 7} {
		got, want := exchange(t, front, raw, split), exchange(t, plain, raw, split)
		if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) != 4 || !strings.Contains(got[0], `POST /a`) {
			t.Errorf("split %d:\nfront:    %q\nnet/http: %q", split, got, want)
		}
	}
}

// TestHostileHeadAroundTheBuffer sends heads of the buffer's size and one byte more: the first is
// the front's, the second net/http's, and both are answered the same. A body and a pipelined request
// follow each.
func TestHostileHeadAroundTheBuffer(t *testing.T) {
	s, addr := start(t, http.HandlerFunc(echo), Options{ErrorLog: quietLog})
	for _, size := range []int{bufferSize - 1, bufferSize, bufferSize + 1, 2 * bufferSize} {
		prefix := "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nX-Pad: "
		pad := size - len(prefix) - len("\r\n\r\n")
		head := prefix + strings.Repeat("p", pad) + "\r\n\r\n"
		if len(head) != size {
			t.Fatalf("head of %d bytes, want %d", len(head), size)
		}
		before := s.handedN.Load()
		c, br := dial(t, addr)
		if _, err := io.WriteString(c, head+"xyzGET /b HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, body := readResponse(t, br, "POST")
		byFront := size <= bufferSize
		if resp.StatusCode != 200 || body != `POST /a "xyz"` || resp.Header.Get("X-Front") != fmt.Sprint(byFront) {
			t.Fatalf("head of %d bytes: %d %q front=%s, want front=%v", size, resp.StatusCode, body, resp.Header.Get("X-Front"), byFront)
		}
		if resp, body := readResponse(t, br, "GET"); body != `GET /b ""` || resp.Header.Get("X-Front") != fmt.Sprint(byFront) {
			t.Fatalf("after a head of %d bytes: %q front=%s", size, body, resp.Header.Get("X-Front"))
		}
		if handed := s.handedN.Load() - before; handed != map[bool]int64{true: 0, false: 1}[byFront] {
			t.Fatalf("head of %d bytes: %d handoffs", size, handed)
		}
	}
}

// closedWithin reads c until the server closes it and reports how long after since that was; it
// fails the test past limit.
func closedWithin(t *testing.T, c net.Conn, since time.Time, limit time.Duration) time.Duration {
	t.Helper()
	_ = c.SetReadDeadline(since.Add(limit))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("still open %v after the slow head began (got %q)", limit, b)
	}
	if len(b) > 0 && !strings.HasPrefix(string(b), "HTTP/1.1 408") && !strings.HasPrefix(string(b), "HTTP/1.1 400") {
		t.Fatalf("a slow head was answered: %q", b)
	}
	return time.Since(since)
}

// trickle writes s a byte every gap, from when first fires, until it is all written or stop closes.
func trickle(c net.Conn, s string, first, gap time.Duration, stop <-chan struct{}) {
	timer := time.NewTimer(first)
	defer timer.Stop()
	for i := 0; i < len(s); i++ {
		select {
		case <-timer.C:
		case <-stop:
			return
		}
		if _, err := c.Write([]byte{s[i]}); err != nil {
			return
		}
		timer.Reset(gap)
	}
}

// TestHostileSlowlorisFirstHead sends a connection's first head late and a byte at a time. The
// front's Options say ReadHeaderTimeout runs from the connection's start for its first request, as
// net/http's does: the connection must close within it, whenever the first byte comes.
func TestHostileSlowlorisFirstHead(t *testing.T) {
	// Long enough that a busy machine's late timers (hundreds of ms under -race beside other
	// packages) stay well inside the margin between once and twice the timeout.
	const d = time.Second
	front, plain := startBoth(t, http.HandlerFunc(echo), Options{ReadHeaderTimeout: d})
	for _, tc := range []struct{ name, addr string }{{"net/http", plain}, {"front", front}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _ := dial(t, tc.addr)
			began := time.Now()
			stop := make(chan struct{})
			defer close(stop)
			go trickle(c, "GET /a HTTP/1.1\r\nHost: a\r\nX-Slow: "+strings.Repeat("s", 100), d*4/5, 20*time.Millisecond, stop)
			took := closedWithin(t, c, began, 3*d)
			t.Logf("%s closed the connection %v after it opened", tc.name, took.Round(time.Millisecond))
			if took > d+d*2/5 { // twice from the first byte would be 1.8d
				t.Errorf("%s: a head begun %v after the connection opened kept it %v (ReadHeaderTimeout %v)", tc.name, d*4/5, took, d)
			}
		})
	}
}

// TestHostileSlowlorisNextHead trickles a keep-alive connection's second head: it must close within
// ReadHeaderTimeout of the head's first byte.
func TestHostileSlowlorisNextHead(t *testing.T) {
	const d = 500 * time.Millisecond
	_, addr := start(t, http.HandlerFunc(echo), Options{ReadHeaderTimeout: d, IdleTimeout: 5 * time.Second})
	c, br := dial(t, addr)
	io.WriteString(c, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, body := readResponse(t, br, "GET"); body != `GET /a ""` {
		t.Fatalf("%q", body)
	}
	stop := make(chan struct{})
	defer close(stop)
	began := time.Now()
	go trickle(c, "GET /b HTTP/1.1\r\nHost: a\r\nX-Slow: "+strings.Repeat("s", 100), 0, 15*time.Millisecond, stop)
	if took := closedWithin(t, c, began, 4*d); took > 2*d {
		t.Errorf("a trickled second head kept the connection %v (ReadHeaderTimeout %v)", took, d)
	}
}

// TestHostileSlowlorisHugeHead trickles a head larger than the buffer: the front hands it to
// net/http once its buffer is full, and net/http's ReadHeaderTimeout starts again there. The whole
// head is bounded by about twice ReadHeaderTimeout, not once (logged; asserted: bounded).
func TestHostileSlowlorisHugeHead(t *testing.T) {
	const d = 500 * time.Millisecond
	_, addr := start(t, http.HandlerFunc(echo), Options{ReadHeaderTimeout: d, ErrorLog: quietLog})
	c, _ := dial(t, addr)
	began := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	io.WriteString(c, "GET /a HTTP/1.1\r\nHost: a\r\nX-Slow: "+strings.Repeat("s", bufferSize-200))
	// The rest of the buffer late in the timeout, then a byte at a time.
	go trickle(c, strings.Repeat("s", 400), d*4/5, 10*time.Millisecond, stop)
	took := closedWithin(t, c, began, 5*d)
	t.Logf("a trickled head over the buffer kept the connection %v (ReadHeaderTimeout %v)", took.Round(time.Millisecond), d)
	if took > 7*d/2 {
		t.Errorf("a trickled head over the buffer kept the connection %v (ReadHeaderTimeout %v)", took, d)
	}
}
