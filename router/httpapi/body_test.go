package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/llamatray/llamatray/router/engine"
)

// dialRaw opens a plain TCP connection to the test server, closed when the test ends; every read
// and write on it fails after 5 s, so that a server that never answers fails the test, not hangs.
func dialRaw(t *testing.T, srv *httptest.Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return conn, bufio.NewReader(conn)
}

// A body that stops arriving ends its request with 408 body_timeout once the body timeout passed,
// the connection is closed, and nothing reaches the engine or the child. Chunked bodies too.
func TestBodyDeadlineCutsStalledBody(t *testing.T) {
	up, got := recordingUpstream(t)
	const timeout = 200 * time.Millisecond
	plain, fe, server := testRouter(t, up.URL, func(o *Options) { o.BodyTimeout = timeout })
	for _, srv := range []*httptest.Server{plain, viaFront(t, server)} {
		for _, c := range []struct{ path, framing, sent string }{
			{"/v1/chat/completions", "Content-Length: 100", `{"model":`},
			{"/models/load", "Content-Length: 100", `{"model":`},
			{"/upstream/m1/completion", "Content-Length: 67108864", `{`},
			{"/v1/chat/completions", "Transfer-Encoding: chunked", "9\r\n{\"model\":\r\n"},
		} {
			t.Run(c.path+" "+c.framing, func(t *testing.T) {
				conn, br := dialRaw(t, srv)
				start := time.Now()
				fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n%s\r\n\r\n%s", c.path, c.framing, c.sent)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("no answer to a stalled body: %v", err)
				}
				_, code, msg := decodeError(t, resp)
				resp.Body.Close()
				if resp.StatusCode != http.StatusRequestTimeout || code != "body_timeout" || !strings.Contains(msg, "did not arrive in time") {
					t.Fatalf("%d %s %q", resp.StatusCode, code, msg)
				}
				if waited := time.Since(start); waited < timeout {
					t.Fatalf("answered after %s, before the body timeout", waited)
				}
				if _, err := br.ReadByte(); err != io.EOF {
					t.Fatalf("the connection stayed open after the body timeout: %v", err)
				}
			})
		}
	}
	select {
	case s := <-got:
		t.Fatalf("a cut request reached the child: %+v", s)
	default:
	}
	n := fe.active("m1")
	fe.mu.Lock()
	defer fe.mu.Unlock()
	if len(fe.calls) != 0 || n != 0 {
		t.Fatalf("a cut request reached the engine: %v, %d leases", fe.calls, n)
	}
}

// The body timeout bounds the body only: a request whose body came in time may wait for its model
// and be answered much later, and its connection serves the next request.
func TestBodyDeadlineEndsWithTheBody(t *testing.T) {
	up, _ := recordingUpstream(t)
	const timeout = 100 * time.Millisecond
	plain, fe, server := testRouter(t, up.URL, func(o *Options) { o.BodyTimeout = timeout })
	fe.mu.Lock()
	fe.acquire = func(ctx context.Context, id string) (*engine.Lease, error) {
		select { // a load that takes several body timeouts
		case <-time.After(5 * timeout):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return fe.lease(id, 5*timeout), nil
	}
	fe.mu.Unlock()
	for _, srv := range []*httptest.Server{plain, viaFront(t, server)} {
		conn, br := dialRaw(t, srv)
		body := `{"model":"m1","messages":[]}`
		for i := range 2 {
			fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"upstream":true`)) {
				t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
			}
		}
		waitReleased(t, fe, 2)
	}
}

// A body declared 64 MiB of which little arrives costs what arrived, not what was declared.
func TestBodyMemoryFollowsTheBytes(t *testing.T) {
	up, _ := recordingUpstream(t)
	logs := &logBuffer{}
	srv, _, _ := testRouter(t, up.URL, func(o *Options) { o.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	const conns = 3
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range conns {
		conn, _ := dialRaw(t, srv)
		fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n{\"model\":\"m1\",\"prompt\":\"%s", DefaultBodyLimit, strings.Repeat("x", 1000))
		conn.Close() // the body ends early: the handler's read fails and it answers 400
	}
	recs := logs.waitRecord(t, conns)
	runtime.ReadMemStats(&after)
	for _, rec := range recs {
		if rec["status"] != 400.0 {
			t.Fatalf("record %v", rec)
		}
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 16<<20 {
		t.Fatalf("%d bodies declared %d MiB each, with 1 KiB sent, allocated %d MiB", conns, DefaultBodyLimit>>20, d>>20)
	}
}

// readGrowing reads every byte whatever the reader's pace and framing; a declared length that
// arrives whole ends in a buffer of exactly that size.
func TestReadGrowing(t *testing.T) {
	for _, n := range []int{1, 511, 512, 513, bodyChunk - 1, bodyChunk, bodyChunk + 1, 3*bodyChunk + 7, 1<<20 + 3} {
		want := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		readers := map[string]func() io.Reader{
			"plain":    func() io.Reader { return bytes.NewReader(want) },
			"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(want)) },
			"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(want)) },
			"data+EOF": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(want)) },
		}
		for name, r := range readers {
			for _, declared := range []int64{int64(n), -1} {
				got, err := readGrowing(r(), declared, DefaultBodyLimit)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%d bytes, %s, declared %d: %d bytes read, %v", n, name, declared, len(got), err)
				}
				if declared > 0 && cap(got) != n {
					t.Errorf("%d bytes declared and sent: buffer of %d", n, cap(got))
				}
			}
		}
	}
	// A reader giving more than declared is still read to its end.
	got, err := readGrowing(strings.NewReader("abcdef"), 3, DefaultBodyLimit)
	if err != nil || string(got) != "abcdef" {
		t.Fatalf("%q %v", got, err)
	}
	// An error is returned as is.
	if _, err := readGrowing(iotest.ErrReader(io.ErrUnexpectedEOF), 10, DefaultBodyLimit); err != io.ErrUnexpectedEOF {
		t.Fatalf("error %v", err)
	}
}
