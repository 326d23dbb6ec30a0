package httpapi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
)

func TestStreamChunksArriveBeforeEnd(t *testing.T) {
	proceed := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-proceed: // the test has read the first chunk through the router
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "data: two\n\n")
	}))
	defer up.Close()
	srv, fe, _ := testRouter(t, up.URL, nil)
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m1","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	br := bufio.NewReader(resp.Body)
	if ev := testbed.ReadSSEEvent(t, br); ev != "data: one\n\n" {
		t.Fatalf("first event %q", ev)
	}
	close(proceed)
	if ev := testbed.ReadSSEEvent(t, br); ev != "data: two\n\n" {
		t.Fatalf("second event %q", ev)
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("end: %q %v", rest, err)
	}
	waitReleased(t, fe, 1)
}

func TestClientDisconnectMidStream(t *testing.T) {
	cancelled := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // as llama-server does; net/http watches for a hang-up only after the body
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(cancelled)
	}))
	defer up.Close()
	srv, fe, _ := testRouter(t, up.URL, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m1","stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	testbed.ReadSSEEvent(t, bufio.NewReader(resp.Body))
	if fe.active("m1") != 1 {
		t.Fatal("no lease held while streaming")
	}
	cancel()
	resp.Body.Close()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("upstream request not cancelled after the client left")
	}
	waitReleased(t, fe, 1)
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

func TestMidStreamUpstreamFailureAbortsClient(t *testing.T) {
	for name, resp := range map[string]string{
		"chunked":        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\nb\r\ndata: one\n\n\r\n",
		"content-length": "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"partial\":",
	} {
		t.Run(name, func(t *testing.T) {
			up := rawUpstream(t, func(c net.Conn) {
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				_, _ = io.WriteString(c, resp)
				// Then the child dies: the connection closes mid-body.
			})
			srv, fe, _ := testRouter(t, up, nil)
			r, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m1","stream":true}`))
			if err != nil {
				// A document of known length is sent in one piece when complete, so the connection
				// can close before its headers: the client sees the failure, never a short answer.
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("request failed with %v; want the connection closed", err)
				}
				waitReleased(t, fe, 1)
				return
			}
			body, err := io.ReadAll(r.Body)
			r.Body.Close()
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("client saw a clean end (%q, %v); want an aborted body", body, err)
			}
			waitReleased(t, fe, 1)
		})
	}
}

// TestKeptAliveCloseNeverFails sends 200 sequential requests through upstreams that close kept-alive
// connections the way llama-server does; none may fail.
func TestKeptAliveCloseNeverFails(t *testing.T) {
	const n = 200
	sse := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"b\r\ndata: one\n\n\r\nd\r\ndata: [END]\n\n\r\n0\r\n\r\n"
	var dropped, streams, streamsKeptAlive atomic.Int64
	upstreams := map[string]string{
		// Closes right after a complete streamed response, without saying so.
		"close after stream": rawUpstream(t, func(c net.Conn) {
			if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
				if b, _ := io.ReadAll(req.Body); strings.Contains(string(b), `"stream":true`) {
					streams.Add(1)
					if !req.Close {
						streamsKeptAlive.Add(1)
					}
				}
				_, _ = io.WriteString(c, sse)
			}
		}),
		// Answers one request, then reads the next one on the same connection and closes without
		// answering: every reuse of a connection fails before a response byte.
		"close after next request": rawUpstream(t, func(c net.Conn) {
			br := bufio.NewReader(c)
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			_, _ = io.WriteString(c, sse)
			if req, err := http.ReadRequest(br); err == nil {
				_, _ = io.Copy(io.Discard, req.Body)
				dropped.Add(1)
			}
		}),
	}
	connClose := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		fmt.Fprint(w, "data: [END]\n\n")
	}))
	defer connClose.Close()
	upstreams["Connection: close"] = connClose.URL

	for name, up := range upstreams {
		t.Run(name, func(t *testing.T) {
			srv, fe, _ := testRouter(t, up, nil)
			failures := 0
			for i := 0; i < n; i++ {
				// Alternately a stream, whose connection is not kept, and a JSON answer, whose
				// connection is: the next request tries it.
				resp, body := post(t, srv.URL+"/v1/chat/completions", fmt.Sprintf(`{"model":"m1","stream":%t,"i":%d}`, i%2 == 1, i))
				if resp.StatusCode != 200 || !strings.HasSuffix(string(body), "data: [END]\n\n") {
					failures++
					t.Errorf("request %d: %d %q", i, resp.StatusCode, body)
				}
			}
			waitReleased(t, fe, n)
			if failures > 0 {
				t.Fatalf("%d of %d requests failed", failures, n)
			}
		})
	}
	if dropped.Load() < n/4 {
		t.Fatalf("the dropping upstream dropped only %d requests; the test did not exercise reuse", dropped.Load())
	}
	if streams.Load() != n/2 || streamsKeptAlive.Load() != 0 {
		t.Fatalf("%d of %d streamed requests asked to keep the connection; want none", streamsKeptAlive.Load(), streams.Load())
	}
}
