package worker

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/internal/ggmlrpc"
	"github.com/llamatray/llamatray/router/testbed"
)

func openEnd(t *testing.T, name, addr string) *End {
	t.Helper()
	e, err := Open(ctxT(t, 5*time.Second), name, addr, testToken, quiet())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// dialEnd connects to e as llama-server does, its HELLO answered (the fake rpc-server's answer).
func dialEnd(t *testing.T, e *End) net.Conn {
	t.Helper()
	c, err := dialHello(e.Addr())
	if err != nil {
		t.Fatalf("dial the local end: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialRefused connects to e and sends HELLO, for a link the worker refuses: no answer is read.
func dialRefused(t *testing.T, e *End) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", e.Addr())
	if err != nil {
		t.Fatalf("dial the local end: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write(ggmlrpc.Hello()); err != nil {
		t.Fatalf("HELLO: %v", err)
	}
	return c
}

// dialHello connects to addr and sends RPC's HELLO; the connection is returned with its answer read.
func dialHello(addr string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(ggmlrpc.Hello()); err != nil {
		c.Close()
		return nil, err
	}
	a, err := ggmlrpc.ReadAnswer(c)
	if err == nil && !bytes.Equal(a, ggmlrpc.Answer(testbed.FakeHelloAnswer)) {
		err = fmt.Errorf("HELLO answered %x", a)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

func TestEndCarriesBytesBothWays(t *testing.T) {
	w := startWorker(t)
	e := openEnd(t, "gpu1", w.addr)
	if h, _, _ := net.SplitHostPort(e.Addr()); h != "127.0.0.1" {
		t.Fatalf("End.Addr = %s, want a loopback address", e.Addr())
	}
	c := dialEnd(t, e)
	msg := strings.Repeat("tensor bytes ", 100000) // 1.3 MB
	echoRound(t, c, msg)
	sent, recv := e.Bytes()
	hello, answer := len(ggmlrpc.Hello()), len(ggmlrpc.Answer(testbed.FakeHelloAnswer))
	if sent != int64(hello+len(msg)) || recv != int64(answer+len(msg)) {
		t.Fatalf("Bytes = %d sent, %d received; want %d and %d", sent, recv, hello+len(msg), answer+len(msg))
	}
	c.Close()
	// The next connection gets the worker again once this session ended (as llama-server does).
	c2 := dialEnd(t, e)
	echoRound(t, c2, "again")
	select {
	case err := <-e.Lost():
		t.Fatalf("Lost after normal closes: %v", err)
	default:
	}
}

func TestOpenNamesTheWorker(t *testing.T) {
	w := startWorker(t)
	_, err := Open(ctxT(t, 5*time.Second), "gpu1", w.addr, "wrong-token-0123456789-abcdefghijklmn", quiet())
	if !errors.Is(err, ErrBadToken) || !strings.HasPrefix(err.Error(), "worker gpu1 ("+w.addr+"): ") {
		t.Fatalf("Open with a wrong token: %v, want ErrBadToken as \"worker gpu1 (%s): ...\"", err, w.addr)
	}
}

// TestBusyRefusal: while one head's session is open a second is refused at once with who holds
// the worker, and the refused local connection is closed, never left hanging.
func TestBusyRefusal(t *testing.T) {
	w := startWorker(t)
	e1 := openEnd(t, "gpu1", w.addr)
	e2 := openEnd(t, "gpu1-other-head", w.addr)
	c1 := dialEnd(t, e1)
	echoRound(t, c1, "hold")
	in, err := Check(ctxT(t, 5*time.Second), w.addr, testToken)
	if err != nil || !in.Busy || !strings.Contains(in.BusyWith, "since") {
		t.Fatalf("Check during a session: %+v, %v; want busy with who and since when", in, err)
	}
	c2 := dialRefused(t, e2)
	err = waitLost(t, e2, busyWait+5*time.Second)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "busy: serving 127.0.0.1:") ||
		!strings.Contains(err.Error(), "since") || !strings.HasPrefix(err.Error(), "worker gpu1-other-head (") {
		t.Fatalf("Lost for the second head: %v, want ErrBusy \"busy: serving ADDR ... since T\" naming the worker", err)
	}
	waitEOF(t, c2, 5*time.Second)
	echoRound(t, c1, "still mine")
}

// TestWorkerKilledMidSession: the worker's end reported on Lost, naming it, within 15 s (its close
// is seen at once; the time is logged, not asserted: a loaded machine may take longer), and
// the local connection closed so llama-server notices.
func TestWorkerKilledMidSession(t *testing.T) {
	w := startWorker(t)
	e := openEnd(t, "gpu1", w.addr)
	c := dialEnd(t, e)
	echoRound(t, c, "before")
	t0 := time.Now()
	w.stop(t)
	err := waitLost(t, e, 15*time.Second) // the bound a worker's loss is reported in
	t.Logf("Lost %s after the worker stopped", time.Since(t0).Round(time.Millisecond))
	if !strings.HasPrefix(err.Error(), "worker gpu1 ("+w.addr+"): link lost") {
		t.Fatalf("Lost: %v, want \"worker gpu1 (%s): link lost ...\"", err, w.addr)
	}
	waitEOF(t, c, 5*time.Second)
	// A new connection after the worker is gone is refused and told too.
	dialRefused(t, e)
	if err := waitLost(t, e, 15*time.Second); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Lost for a connection to a stopped worker: %v, want ErrUnreachable", err)
	}
}

// TestRPCServerRestarted: the rpc-server dying ends the session it served (reported on Lost) and
// is started again, loopback only, so the next session works.
func TestRPCServerRestarted(t *testing.T) {
	w := startWorker(t)
	e := openEnd(t, "gpu1", w.addr)
	c := dialEnd(t, e)
	echoRound(t, c, "first")
	first := w.fakeArgv(t)
	if len(first) != 1 {
		t.Fatalf("%d rpc-servers started, want 1", len(first))
	}
	for pid := range first {
		p, err := os.FindProcess(pid)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	if err := waitLost(t, e, 15*time.Second); !strings.Contains(err.Error(), "link lost") {
		t.Fatalf("Lost: %v", err)
	}
	waitEOF(t, c, 5*time.Second)
	// The next session waits for the restarted rpc-server (the worker waits up to 5 s for it).
	var c2 net.Conn
	for attempt := 0; ; attempt++ {
		var err error
		if c2, err = dialHello(e.Addr()); err == nil {
			t.Cleanup(func() { c2.Close() })
			break
		}
		if attempt == 3 {
			t.Fatalf("no session after the rpc-server's restart: %v, %v", err, <-e.Lost())
		}
		<-e.Lost()
	}
	echoRound(t, c2, "second")
	if n := len(w.fakeArgv(t)); n != 2 {
		t.Fatalf("%d rpc-servers started, want 2 (one restart)", n)
	}
}

// TestRPCServerLoopbackOnly: the rpc-server is always told to bind 127.0.0.1, and (held, as where
// no network namespace can be made) its port answers on no other address of this machine.
func TestRPCServerLoopbackOnly(t *testing.T) {
	w := startWorkerHeld(t, true)
	for _, argv := range w.fakeArgv(t) {
		i := slices.Index(argv, "-H")
		if i < 0 || i+1 >= len(argv) || argv[i+1] != "127.0.0.1" || slices.Contains(argv, "0.0.0.0") {
			t.Fatalf("rpc-server argv %q, want -H 127.0.0.1", argv)
		}
		port := argv[slices.Index(argv, "-p")+1]
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err != nil {
			t.Fatalf("the rpc-server does not answer on loopback: %v", err)
		} else {
			c.Close()
		}
		addrs, _ := net.InterfaceAddrs()
		checked := 0
		for _, a := range addrs {
			ip, ok := a.(*net.IPNet)
			if !ok || ip.IP.IsLoopback() || ip.IP.IsLinkLocalUnicast() {
				continue
			}
			checked++
			if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip.IP.String(), port), time.Second); err == nil {
				c.Close()
				t.Fatalf("the rpc-server's port %s answers on %s", port, ip.IP)
			}
		}
		t.Logf("rpc-server port %s refused on %d non-loopback addresses", port, checked)
	}
	if Serve(ctxT(t, time.Second), Options{Listen: "127.0.0.1:0", Token: testToken, RPCServer: "/nonexistent/ggml-rpc-server"}) == nil {
		t.Fatal("Serve with a missing rpc-server returned nil")
	}
	os.WriteFile(w.dir+"/fail", nil, 0o644)
	err := Serve(ctxT(t, 10*time.Second), Options{Listen: "127.0.0.1:0", Token: testToken, RPCServer: os.Args[0], Logger: quiet()})
	if err == nil || !strings.Contains(err.Error(), "told to fail") {
		t.Fatalf("Serve with an rpc-server that fails to start: %v, want its output in the error", err)
	}
}

// TestCheckRPCServerDown: a worker whose rpc-server died and cannot start again says so to Check
// (ErrWorkerDown), so the head fails the load before it spawns llama-server.
func TestCheckRPCServerDown(t *testing.T) {
	w := startWorker(t)
	os.WriteFile(w.dir+"/fail", nil, 0o644) // every restart fails
	for pid := range w.fakeArgv(t) {
		p, err := os.FindProcess(pid)
		if err != nil {
			t.Fatal(err)
		}
		p.Kill()
	}
	// The rpc-server is an external process: poll Check until the worker noticed, with a deadline.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); ; <-tick.C {
		_, err := Check(ctxT(t, 5*time.Second), w.addr, testToken)
		if errors.Is(err, ErrWorkerDown) {
			if !strings.Contains(err.Error(), w.addr) || !strings.Contains(err.Error(), "rpc-server") {
				t.Fatalf("Check: %v, want the address and the rpc-server named", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Check: %v, want ErrWorkerDown", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("Check still ok 10 s after the rpc-server died")
		}
	}
}

// TestWorkerKilledMidUpload: a worker that dies while the head is sending (the upload's write
// fails, maybe before the download's read does) is reported on Lost, naming it, as any lost link.
func TestWorkerKilledMidUpload(t *testing.T) {
	for i := range 3 {
		w := startWorker(t)
		e := openEnd(t, "gpu1", w.addr)
		c := dialEnd(t, e)
		echoRound(t, c, "before")
		// Send without reading: the echo's answers fill the buffers, and the upload blocks on
		// its write to the link.
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			buf := make([]byte, 64<<10)
			for {
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		}()
		testbed.WaitFor(t, 10*time.Second, "the upload to fill the buffers", func() bool {
			s, _ := e.Bytes()
			return s > 1<<20
		})
		w.stop(t)
		err := waitLost(t, e, 15*time.Second)
		if !strings.HasPrefix(err.Error(), "worker gpu1 ("+w.addr+"): link lost") {
			t.Fatalf("round %d: Lost: %v, want \"worker gpu1 (%s): link lost ...\"", i, err, w.addr)
		}
		c.Close()
		<-sent
	}
}
