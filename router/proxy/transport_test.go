package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// keepAliveUpstream answers every request on a connection with body, keeping the connection, and
// counts connections; closed gets one value per connection that ended.
func keepAliveUpstream(t *testing.T, body string) (url string, conns *atomic.Int32, closed chan struct{}) {
	conns, closed = &atomic.Int32{}, make(chan struct{}, 64)
	url = rawUpstream(t, func(c net.Conn) {
		conns.Add(1)
		defer func() { closed <- struct{}{} }()
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
				return
			}
		}
	})
	return url, conns, closed
}

func roundTrip(t *testing.T, u *Transport, ctx context.Context, url string, readAll bool) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(`{"x":1}`))
	resp, err := u.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if !readAll {
		return resp, ""
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp, string(b)
}

func TestUpstreamReusesAConnectionReadToItsEnd(t *testing.T) {
	url, conns, _ := keepAliveUpstream(t, `{"ok":true}`)
	u := NewTransport(nil)
	defer u.CloseIdleConnections()
	for i := 0; i < 5; i++ {
		if _, body := roundTrip(t, u, context.Background(), url, true); body != `{"ok":true}` {
			t.Fatalf("body %q", body)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("5 requests in a row used %d connections, want 1", n)
	}
}

func TestUpstreamClosesAHalfReadConnection(t *testing.T) {
	url, conns, closed := keepAliveUpstream(t, strings.Repeat("x", 100))
	u := NewTransport(nil)
	defer u.CloseIdleConnections()
	resp, _ := roundTrip(t, u, context.Background(), url, false)
	buf := make([]byte, 10)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	<-closed // the upstream saw its connection end
	roundTrip(t, u, context.Background(), url, true)
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2: a half-read answer's connection must not be reused", n)
	}
}

func TestUpstreamKeepsNoStreamConnection(t *testing.T) {
	url, conns, closed := keepAliveUpstream(t, "ok")
	u := NewTransport(nil)
	defer u.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, url+"/completion", strings.NewReader("{}"))
	req.Close = true // what rewrite asks for a stream
	resp, err := u.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	<-closed
	roundTrip(t, u, context.Background(), url, true)
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

func TestUpstreamCancelEndsABlockedRead(t *testing.T) {
	url := rawUpstream(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
		_, _ = io.Copy(io.Discard, c) // and nothing more until the router hangs up
	})
	u := NewTransport(nil)
	ctx, cancel := context.WithCancel(context.Background())
	resp, _ := roundTrip(t, u, ctx, url, false)
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(buf)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("read after cancel succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled request's read stayed blocked")
	}
	resp.Body.Close()
}

func TestUpstreamPrunesIdleConnections(t *testing.T) {
	url, _, closed := keepAliveUpstream(t, "{}")
	u := NewTransport(nil)
	u.idleFor = 50 * time.Millisecond
	roundTrip(t, u, context.Background(), url, true)
	select {
	case <-closed: // pruned without another request
	case <-time.After(10 * time.Second):
		t.Fatal("an idle connection outlived its idle time")
	}
	u.mu.Lock()
	n, timer := len(u.idle), u.timer
	u.mu.Unlock()
	if n != 0 || timer != nil {
		t.Fatalf("after pruning: %d children with idle connections, timer %v", n, timer)
	}
}

func TestUpstreamDialError(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	u := NewTransport(nil)
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/health", nil)
	_, err := u.RoundTrip(req)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Fatalf("dial to a closed port: %v, want the dial error", err)
	}
}

// TestUpstreamDropsAStoppingModelsConnections: the engine's OnStop hook closes the idle connections
// to that model's child (llama-server waits for them before it exits), and only those.
func TestUpstreamDropsAStoppingModelsConnections(t *testing.T) {
	urlA, _, closedA := keepAliveUpstream(t, "{}")
	urlB, connsB, _ := keepAliveUpstream(t, "{}")
	type modelKey struct{}
	u := NewTransport(func(ctx context.Context) (string, string) { return ctx.Value(modelKey{}).(string), "" })
	defer u.CloseIdleConnections()
	send := func(url, model string) {
		t.Helper()
		ctx := context.WithValue(context.Background(), modelKey{}, model)
		roundTrip(t, u, ctx, url, true)
	}
	send(urlA, "alpha")
	send(urlB, "beta")
	u.CloseIdle("alpha")
	select {
	case <-closedA:
	case <-time.After(10 * time.Second):
		t.Fatal("alpha's idle connection stayed open after CloseIdle(alpha)")
	}
	send(urlB, "beta")
	if n := connsB.Load(); n != 1 {
		t.Fatalf("beta used %d connections: its idle one was closed too", n)
	}
}

// rawUpstream is an HTTP/1.1 server on a bare listener, to misbehave in ways net/http won't.
// serve handles one connection; it runs in its own goroutine.
func rawUpstream(t testing.TB, serve func(c net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestUpstreamResendsOnClosedConnection shows the failure the upstream's one resend exists for: a
// POST on a kept-alive connection the child closed after reading it fails with net/http's transport,
// and succeeds through the upstream, the body replayed whole.
func TestUpstreamResendsOnClosedConnection(t *testing.T) {
	bodies := make(chan string, 8)
	up := rawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(req.Body)
		bodies <- string(b)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		if req, err := http.ReadRequest(br); err == nil {
			_, _ = io.Copy(io.Discard, req.Body)
		}
	})
	send := func(rt http.RoundTripper, body string) error {
		req, _ := http.NewRequest(http.MethodPost, up+"/completion", strings.NewReader(body))
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	bare := &http.Transport{} // net/http's, which does not resend a POST
	defer bare.CloseIdleConnections()
	if err := send(bare, "a"); err != nil {
		t.Fatal(err)
	}
	<-bodies
	if err := send(bare, "b"); err == nil {
		t.Fatal("the bare transport survived a dropped kept-alive connection; the upstream is not misbehaving")
	}

	rt := NewTransport(nil)
	defer rt.CloseIdleConnections()
	for _, b := range []string{"first", "second", "third"} {
		if err := send(rt, b); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if got := <-bodies; got != b {
			t.Fatalf("upstream got body %q, want %q", got, b)
		}
	}
}

// CloseIdleConnections closes the idle connections to every child, and a request after it dials anew.
func TestTransportCloseIdleConnections(t *testing.T) {
	urlA, connsA, closedA := keepAliveUpstream(t, "{}")
	urlB, _, closedB := keepAliveUpstream(t, "{}")
	u := NewTransport(nil)
	roundTrip(t, u, context.Background(), urlA, true)
	roundTrip(t, u, context.Background(), urlB, true)
	u.CloseIdleConnections()
	for _, closed := range []chan struct{}{closedA, closedB} {
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatal("an idle connection stayed open after CloseIdleConnections")
		}
	}
	roundTrip(t, u, context.Background(), urlA, true)
	if n := connsA.Load(); n != 2 {
		t.Fatalf("%d connections to A, want 2 (a closed one reused?)", n)
	}
	u.CloseIdleConnections()
}
