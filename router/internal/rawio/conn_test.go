package rawio

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/internal/neterr"
)

// pair is a connected stream socket pair over network ("tcp" on loopback, or "unix"), the first
// end wrapped.
func pair(t *testing.T, network string) (wrapped, peer net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		if runtime.GOOS == "windows" {
			t.Skip("no unix sockets asked of Windows here")
		}
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	c, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p := <-accepted
	if p == nil {
		t.FailNow()
	}
	w := Wrap(c)
	t.Cleanup(func() { w.Close(); p.Close() })
	return w, p
}

// pendingRead starts a read of c, which has nothing to read, and checks that it is still waiting
// a moment later; its error comes on the channel once something ends it.
func pendingRead(t *testing.T, c net.Conn) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 8))
		errc <- err
	}()
	select {
	case err := <-errc:
		t.Fatalf("a read with nothing to read returned: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	return errc
}

func eachNetwork(t *testing.T, f func(t *testing.T, network string)) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) { f(t, network) })
	}
}

// On Linux without the race detector a socket is wrapped once, and what has no descriptor is
// left as it is; elsewhere nothing is wrapped.
func TestWrap(t *testing.T) {
	if Enabled != (runtime.GOOS == "linux" && !raceBuild) {
		t.Fatalf("Enabled is %v on %s (race detector: %v)", Enabled, runtime.GOOS, raceBuild)
	}
	w, _ := pair(t, "tcp")
	if _, wrapped := w.(interface{ Unwrap() net.Conn }); wrapped != Enabled {
		t.Fatalf("Wrap of a TCP connection: %T, with Enabled %v", w, Enabled)
	}
	if Wrap(w) != w {
		t.Fatal("a wrapped connection was wrapped again")
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if Wrap(a) != a {
		t.Fatal("a connection without a descriptor was wrapped")
	}
}

// Megabytes both ways, more than the socket buffers hold, so that writes wait for room and reads
// for data: every byte arrives, in order, with reads of odd sizes.
func TestBytesBothWays(t *testing.T) {
	eachNetwork(t, func(t *testing.T, network string) {
		w, p := pair(t, network)
		out := make([]byte, 4<<20)
		if _, err := rand.Read(out); err != nil {
			t.Fatal(err)
		}
		// wrapped → peer
		errc := make(chan error, 1)
		go func() {
			n, err := w.Write(out)
			if err == nil && n != len(out) {
				err = io.ErrShortWrite
			}
			errc <- err
		}()
		got := make([]byte, len(out))
		if _, err := io.ReadFull(p, got); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, out) {
			t.Fatal("the peer read other bytes than were written")
		}
		// peer → wrapped, read 1,000 bytes at a time
		go func() {
			_, err := p.Write(out)
			errc <- err
		}()
		got = got[:0]
		buf := make([]byte, 1000)
		for len(got) < len(out) {
			n, err := w.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, buf[:n]...)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, out) {
			t.Fatal("the wrapped end read other bytes than were written")
		}
		if n, err := w.Read(nil); n != 0 || err != nil {
			t.Fatalf("an empty read: %d, %v", n, err)
		}
	})
}

// The peer's close is the end of the stream; a half close is seen by the peer as such, and the
// wrapped end still reads the answer.
func TestEndOfStreamAndHalfClose(t *testing.T) {
	eachNetwork(t, func(t *testing.T, network string) {
		w, p := pair(t, network)
		if _, err := w.Write([]byte("ask")); err != nil {
			t.Fatal(err)
		}
		if err := w.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		asked, err := io.ReadAll(p)
		if err != nil || string(asked) != "ask" {
			t.Fatalf("peer read %q, %v", asked, err)
		}
		if _, err := p.Write([]byte("answer")); err != nil {
			t.Fatal(err)
		}
		p.Close()
		got, err := io.ReadAll(w)
		if err != nil || string(got) != "answer" {
			t.Fatalf("wrapped end read %q, %v", got, err)
		}
		if n, err := w.Read(make([]byte, 8)); n != 0 || err != io.EOF {
			t.Fatalf("read after the end: %d, %v", n, err)
		}
	})
}

// Deadlines are the poller's: a read past its deadline times out as net's do, a deadline moved
// into the past wakes a read in progress, and a read with the deadline cleared reads again.
func TestDeadlines(t *testing.T) {
	eachNetwork(t, func(t *testing.T, network string) {
		w, p := pair(t, network)
		if err := w.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		_, err := w.Read(make([]byte, 8))
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read past its deadline: %v", err)
		}

		if err := w.SetReadDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		errc := pendingRead(t, w)
		if err := w.SetReadDeadline(time.Unix(1, 0)); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a read woken by a past deadline: %v", err)
		}

		if err := w.SetReadDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 8)
		if n, err := w.Read(buf); n != 1 || err != nil || buf[0] != 'x' {
			t.Fatalf("read after the deadline was cleared: %d, %v", n, err)
		}

		if err := w.SetWriteDeadline(time.Unix(1, 0)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("late")); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("write past its deadline: %v", err)
		}
	})
}

// Closing the connection ends a read in progress with net.ErrClosed, and later calls say so too.
func TestCloseWhileReading(t *testing.T) {
	eachNetwork(t, func(t *testing.T, network string) {
		w, _ := pair(t, network)
		errc := pendingRead(t, w)
		w.Close()
		if err := <-errc; !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read of a connection closed under it: %v", err)
		}
		if _, err := w.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write after close: %v", err)
		}
	})
}

// A peer that resets the connection: the read says reset, as net's does, and a write fails with
// an error instead of a signal that ends the process.
func TestReset(t *testing.T) {
	w, p := pair(t, "tcp")
	if err := p.(*net.TCPConn).SetLinger(0); err != nil {
		t.Fatal(err)
	}
	p.Close()
	_, err := w.Read(make([]byte, 8))
	if runtime.GOOS == "linux" && !neterr.Reset(err) {
		t.Fatalf("read after the peer reset: %v", err)
	}
	var oe *net.OpError
	if err == nil || !errors.As(err, &oe) || oe.Op == "" {
		t.Fatalf("read after the peer reset: %v, want a *net.OpError", err)
	}
	var werr error
	for i := 0; i < 100 && werr == nil; i++ { // the first write may still be taken by the kernel
		_, werr = w.Write(make([]byte, 64<<10))
	}
	if werr == nil {
		t.Fatal("writes to a reset connection kept succeeding")
	}
}
