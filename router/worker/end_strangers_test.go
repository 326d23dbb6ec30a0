package worker

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// countingRelay forwards every connection it accepts to addr and counts them.
func countingRelay(t *testing.T, addr string) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { io.Copy(up, c); up.Close() }()
				io.Copy(c, up)
			}()
		}
	}()
	return ln.Addr().String(), &n
}

// TestSpreadModelSurvivesLocalStrangers: while a model's link is open, a second local connection
// to its End (a scanner, a health check, a web page's no-cors POST) neither stops it nor is told
// on Lost: one that cannot begin RPC (an HTTP request) is closed at once without dialing the
// worker, and one that can gets the worker's "busy", which is the new link's failure alone.
func TestSpreadModelSurvivesLocalStrangers(t *testing.T) {
	w := startWorker(t)
	relay, dials := countingRelay(t, w.addr)
	e := openEnd(t, "gpu1", relay)
	c := dialEnd(t, e)
	echoRound(t, c, "the model's link")
	before := dials.Load()

	for _, req := range []string{"POST /v1/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}", "GET / HTTP/1.1\r\n\r\n", "\x16\x03\x01"} {
		h, err := net.Dial("tcp", e.Addr())
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(req))
		waitEOF(t, h, 5*time.Second)
		h.Close()
	}
	if n := dials.Load(); n != before {
		t.Fatalf("the End dialed the worker %d times for connections that cannot be RPC", n-before)
	}

	s := dialRefused(t, e) // HELLO: a link is dialed, and the worker says busy
	waitEOF(t, s, busyWait+10*time.Second)
	select {
	case err := <-e.Lost():
		t.Fatalf("a stranger's refused link reported as the model's loss: %v", err)
	default:
	}
	echoRound(t, c, "the model's link still")
}
