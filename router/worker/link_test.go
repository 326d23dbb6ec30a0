package worker

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestCheckAnswersStatus(t *testing.T) {
	w := startWorker(t)
	in, err := Check(ctxT(t, 5*time.Second), w.addr, testToken)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if in.Name != "w1" || in.Version != "test" || in.Busy {
		t.Fatalf("Check = %+v, want w1, test, not busy", in)
	}
}

func TestCheckRefusesWrongToken(t *testing.T) {
	w := startWorker(t)
	_, err := Check(ctxT(t, 5*time.Second), w.addr, "another-token-0123456789-abcdefghijkl")
	if !errors.Is(err, ErrBadToken) || !strings.Contains(err.Error(), w.addr) {
		t.Fatalf("Check with a wrong token: %v, want ErrBadToken naming %s", err, w.addr)
	}
}

func TestCheckUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Check(ctxT(t, 5*time.Second), addr, testToken)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("Check of a closed port: %v, want ErrUnreachable naming %s", err, addr)
	}
}

func TestCheckSilentPeerIsUnreachableWithinContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepts and says nothing
		}
	}()
	t0 := time.Now()
	_, err = Check(ctxT(t, time.Second), ln.Addr().String(), testToken)
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Check of a silent peer: %v, want ErrUnreachable", err)
	}
	// A Check that ignored its context would wait for the peer forever; the bound is loose so
	// that a loaded machine cannot fail it.
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("Check took %s past its 1 s context", d)
	}
}

func TestCheckNotWorker(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsSrv.Close()
	for name, addr := range map[string]string{"http": plain.Listener.Addr().String(), "https": tlsSrv.Listener.Addr().String()} {
		_, err := Check(ctxT(t, 5*time.Second), addr, testToken)
		if !errors.Is(err, ErrNotWorker) {
			t.Errorf("Check of an %s server: %v, want ErrNotWorker", name, err)
		}
	}
}

// TestHostileClients: garbage, a huge line and silent clients neither hold the worker nor get
// anything but a refusal.
func TestHostileClients(t *testing.T) {
	shortHandshakes(t, 3*time.Second)
	w := startWorker(t)
	// The hostile host is 127.0.0.2 (Linux routes all of 127/8 to loopback), the head 127.0.0.1.
	hostile := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	dial := func() net.Conn {
		c, err := hostile.Dial("tcp", w.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// Silent clients, past the per-host limit: the ones over it are closed at once, the others
	// by the handshake deadline; a head elsewhere gets through meanwhile.
	var silent []net.Conn
	for range maxHandshakesPerHost - 2 {
		silent = append(silent, dial())
	}
	over := make([]net.Conn, 0, 4)
	garbage := dial()
	garbage.Write([]byte("GET / HTTP/1.0\r\n\r\n" + strings.Repeat("\x00\xff", 1000)))

	huge := tls.Client(dial(), clientTLS())
	if err := huge.Handshake(); err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	huge.Write([]byte(strings.Repeat("x", 3*maxFrame)))
	var a answer
	if err := readLine(bufio.NewReader(huge), &a); err != nil || a.OK || a.Code != codeBadReq {
		t.Fatalf("answer to a huge line: %+v, %v; want a bad-request refusal", a, err)
	}

	for range 4 {
		over = append(over, dial())
	}
	if _, err := Check(ctxT(t, 5*time.Second), w.addr, testToken); err != nil {
		t.Fatalf("Check beside hostile clients: %v", err)
	}
	// At least those over the limit are closed at once: before the worker closes any silent
	// connection within the limit, which it does at the handshake deadline. Each connection's
	// end is read on its own goroutine; the order they end in is what is checked.
	// The garbage connection is refused at its first record, whenever that is read: it is
	// watched, but not part of the order.
	const (
		isOver = iota
		isSilent
		isGarbage
	)
	type ended struct {
		kind     int
		timedOut bool
	}
	order := make(chan ended, len(over)+len(silent)+1)
	watch := func(c net.Conn, kind int) {
		c.SetReadDeadline(time.Now().Add(handshakeTimeout + 10*time.Second))
		_, err := io.Copy(io.Discard, c)
		order <- ended{kind: kind, timedOut: isTimeout(err)}
	}
	for _, c := range over {
		go watch(c, isOver)
	}
	for _, c := range silent {
		go watch(c, isSilent)
	}
	go watch(garbage, isGarbage)
	closedEarly, silentSeen := 0, false
	for range len(over) + len(silent) + 1 {
		e := <-order
		switch {
		case e.kind == isOver && !silentSeen && !e.timedOut:
			closedEarly++
		case e.kind == isSilent:
			silentSeen = true
		}
		// The worker closes every silent or garbage connection by its handshake deadline.
		if e.kind != isOver && e.timedOut {
			t.Errorf("a silent or garbage connection was still open %s after the handshake deadline", 10*time.Second)
		}
	}
	if closedEarly < 2 {
		t.Fatalf("%d of 4 connections over the per-host limit were closed before the silent ones, want at least 2", closedEarly)
	}
}

// TestRelayCannotAuthenticate: a man in the middle that terminates TLS with its own certificate
// and passes the head's request line on to the worker gets refused: the proof is bound to the
// TLS session it was made in.
func TestRelayCannotAuthenticate(t *testing.T) {
	w := startWorker(t)
	cert, err := selfSigned("relay")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", serverTLS(cert))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	relayed := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			relayed <- "read: " + err.Error()
			return
		}
		up, err := tls.Dial("tcp", w.addr, clientTLS())
		if err != nil {
			relayed <- "dial: " + err.Error()
			return
		}
		defer up.Close()
		up.Write([]byte(line))
		reply, _ := bufio.NewReader(up).ReadString('\n')
		relayed <- reply
		c.Write([]byte(reply))
	}()
	_, err = Check(ctxT(t, 10*time.Second), ln.Addr().String(), testToken)
	if !errors.Is(err, ErrBadToken) {
		t.Fatalf("Check through a TLS-terminating relay: %v, want ErrBadToken", err)
	}
	if r := <-relayed; !strings.Contains(r, codeBadToken) {
		t.Fatalf("the worker answered the relay %q, want a bad-token refusal", r)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestNewToken(t *testing.T) {
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if a == b || validToken(a) != nil || len(a) != 39 {
		t.Fatalf("NewToken: %q, %q", a, b)
	}
	if validToken("short") == nil || validToken(" spaced-token-0123456789-abcdefghijkl ") == nil {
		t.Fatal("validToken accepts a short or spaced token")
	}
	// 16 characters of a guessable word are not enough: the head's proof can be tried offline.
	short := strings.Repeat("x", 31)
	if err := validToken(short); err == nil || !strings.Contains(err.Error(), "at least 32 characters") || !strings.Contains(err.Error(), "llamatray worker") {
		t.Fatalf("validToken of 31 characters: %v", err)
	}
	if err := validToken(short + "x"); err != nil {
		t.Fatalf("validToken of 32 characters: %v", err)
	}
}

var _ = io.EOF
