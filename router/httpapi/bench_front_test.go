package httpapi

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/front"
)

// BenchmarkRouterFront sends a small chat completion through the router served by router/front, the
// server the endpoint runs, from a client and to an upstream that are hand-written HTTP/1.1 loops on
// kept-alive connections: what the benchmark allocates is the router's own. allocs/op and B/op are
// the router's cost per request; `-memprofile` says where.
func BenchmarkRouterFront(b *testing.B) {
	addr, req := routerFrontSetup(b)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReaderSize(c, 8192)
	exchange := func() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		if status, err := benchReadAnswer(br); err != nil || status != http.StatusOK {
			b.Fatalf("answer %d: %v", status, err)
		}
	}
	for range 100 { // warm: the upstream connection and every pool
		exchange()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		exchange()
	}
}

// routerFrontSetup starts the upstream loop and the router through the front, and returns the
// router's address and the raw request the benchmarks send.
func routerFrontSetup(b *testing.B) (addr string, req []byte) {
	reply := "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nServer: llama.cpp\r\nContent-Length: 104\r\nKeep-Alive: timeout=5, max=100\r\n\r\n" +
		`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`[:104]
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = up.Close() })
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go answerLoop(c, []byte(reply))
		}
	}()
	// At log_level "warn", the service's default: no access log line is built.
	_, _, server := testRouter(b, "http://"+up.Addr().String(), func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	ln := viaFront(b, server).Listener
	body := `{"model":"fast","messages":[{"role":"user","content":"hello there"}]}`
	return ln.Addr().String(), []byte("POST /v1/chat/completions HTTP/1.1\r\nHost: " + ln.Addr().String() + "\r\nUser-Agent: bench\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

// answerLoop answers every request on c with reply: a head read to its blank line and the body of its
// Content-Length skipped, nothing allocated per request.
func answerLoop(c net.Conn, reply []byte) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 16384)
	for {
		n := 0
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(line) <= 2 {
				break
			}
			if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
				n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
			}
		}
		if _, err := br.Discard(n); err != nil {
			return
		}
		if _, err := c.Write(reply); err != nil {
			return
		}
	}
}

// benchReadAnswer reads one answer with a Content-Length from br and returns its status.
func benchReadAnswer(br *bufio.Reader) (int, error) {
	status, n := 0, -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if status == 0 && len(line) > 12 {
			status, _ = strconv.Atoi(string(line[9:12]))
		}
		if len(line) <= 2 {
			break
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	if n < 0 {
		return status, io.ErrUnexpectedEOF
	}
	_, err := br.Discard(n)
	return status, err
}

// viaFront serves h through router/front, the endpoint's server, instead of net/http's. Only URL and
// Listener of what it returns are set; the server closes when the test ends.
func viaFront(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fs := front.New(front.Options{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	go func() { _ = fs.Serve(ln) }()
	t.Cleanup(func() { _ = fs.Close() })
	return &httptest.Server{URL: "http://" + ln.Addr().String(), Listener: ln}
}

func fmtAnswerErr(status int, err error) error {
	return fmt.Errorf("answer %d: %v", status, err)
}
