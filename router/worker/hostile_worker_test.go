package worker

import (
	"bufio"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// hostileWorker is a worker that knows the token (a paired machine gone bad): it proves itself
// and then answers with what reply makes of the head's request.
func hostileWorker(t *testing.T, reply func(c *tls.Conn, p string)) string {
	t.Helper()
	cert, err := selfSigned("bad")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", serverTLS(cert))
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
				tc := c.(*tls.Conn)
				var req request
				if tc.Handshake() != nil || readLine(bufio.NewReaderSize(tc, maxFrame), &req) != nil {
					return
				}
				p, _ := proof(tc.ConnectionState(), testToken, "worker")
				reply(tc, hex.EncodeToString(p))
			}()
		}
	}()
	return ln.Addr().String()
}

// TestHostileWorker: what a worker says is shown (its name and whom it is busy with, in
// /api/status and the window; its refusals, in errors): escape sequences and bidi overrides are
// cleaned out and the text bounded; a huge or malformed answer is no worker; one that stalls after
// the head's request ends within the head's context.
func TestHostileWorker(t *testing.T) {
	evil := "\x1b[2J\x1b]0;pwned\x07name\u202e" + strings.Repeat("z", 900)
	addr := hostileWorker(t, func(c *tls.Conn, p string) {
		writeLine(c, answer{OK: true, Proof: p, Info: &Info{Name: evil, Version: evil, Busy: true, BusyWith: evil}})
	})
	in, err := Check(ctxT(t, 5*time.Second), addr, testToken)
	if err != nil {
		t.Fatal(err)
	}
	for field, s := range map[string]string{"name": in.Name, "version": in.Version, "busy_with": in.BusyWith} {
		if strings.ContainsAny(s, "\x1b\x07\u202e") || utf8.RuneCountInString(s) > maxShown || !strings.HasPrefix(s, "name") {
			t.Errorf("the worker's %s reaches the head as %q", field, s)
		}
	}

	addr = hostileWorker(t, func(c *tls.Conn, p string) {
		writeLine(c, answer{Code: codeBusy, Error: evil})
	})
	_, err = Check(ctxT(t, 5*time.Second), addr, testToken)
	if !errors.Is(err, ErrBusy) || strings.ContainsAny(err.Error(), "\x1b\u202e") || len(err.Error()) > 2*maxShown+len(addr)+64 {
		t.Errorf("a worker's refusal reaches the head as %q", err)
	}

	for name, reply := range map[string]func(*tls.Conn, string){
		"huge line":  func(c *tls.Conn, p string) { c.Write([]byte(strings.Repeat("{", 1<<20))) },
		"not json":   func(c *tls.Conn, p string) { c.Write([]byte("\x00\x01binary\n")) },
		"wrong type": func(c *tls.Conn, p string) { c.Write([]byte(`{"ok":"yes","info":[1,2]}` + "\n")) },
	} {
		addr := hostileWorker(t, reply)
		if _, err := Check(ctxT(t, 5*time.Second), addr, testToken); !errors.Is(err, ErrNotWorker) {
			t.Errorf("%s: %v, want ErrNotWorker", name, err)
		}
	}

	stall := make(chan struct{})
	t.Cleanup(func() { close(stall) })
	addr = hostileWorker(t, func(c *tls.Conn, p string) { <-stall })
	t0 := time.Now()
	if _, err := Check(ctxT(t, 2*time.Second), addr, testToken); !errors.Is(err, ErrUnreachable) {
		t.Errorf("a worker that stalls after the request: %v, want ErrUnreachable", err)
	}
	t.Logf("a stalled worker given up after %s", time.Since(t0).Round(time.Millisecond))
}
