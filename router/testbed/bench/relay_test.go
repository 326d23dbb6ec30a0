package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// The relay carries JSON answers and chunked streams, over kept connections both ways; a stream, a
// target that closes after an answer or one that closed a kept connection costs it a new
// connection, never the client's.
func TestRelay(t *testing.T) {
	var conns atomic.Int32
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/stream":
			for i := range 3 {
				fmt.Fprintf(w, "data: %d %s\n\n", i, b)
				w.(http.Flusher).Flush()
			}
		case "/close":
			w.Header().Set("Connection", "close")
			fmt.Fprintf(w, "closing %s", b)
		default:
			fmt.Fprintf(w, "echo %s", b)
		}
	}))
	up.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	defer up.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go relay(ln, up.URL) //nolint:errcheck // serves until the listener closes
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	ask := func(path, body string) string {
		t.Helper()
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return string(b)
	}
	for i := range 3 {
		if got, want := ask("/json", fmt.Sprint(i)), fmt.Sprintf("echo %d", i); got != want {
			t.Fatalf("JSON %d: %q, want %q", i, got, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections to the target for 3 answers, want 1 kept", n)
	}
	if got := ask("/stream", "s"); got != "data: 0 s\n\ndata: 1 s\n\ndata: 2 s\n\n" {
		t.Fatalf("stream: %q", got)
	}
	// A stream's connection is closed (llama-server closes it), so is one the target says
	// it closes: each next answer comes on a new one.
	if got := ask("/close", "c"); got != "closing c" || conns.Load() != 2 {
		t.Fatalf("after a stream: %q with %d connections, want a second one", got, conns.Load())
	}
	if got := ask("/json", "after"); got != "echo after" || conns.Load() != 3 {
		t.Fatalf("after the target closed: %q with %d connections, want a third one", got, conns.Load())
	}
	// A kept connection the target closed under the relay: the request goes again, on a new one.
	up.CloseClientConnections()
	if got := ask("/json", "again"); got != "echo again" || conns.Load() != 4 {
		t.Fatalf("after the target closed a kept connection: %q with %d connections, want a fourth", got, conns.Load())
	}
}
