package worker

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/internal/ggmlrpc"
)

// rpcPort is the port of the rpc-server started last (its argv file is the newest).
func (w *testWorker) rpcPort(t *testing.T) string {
	t.Helper()
	var newest time.Time
	port := ""
	for pid, argv := range w.fakeArgv(t) {
		st, err := os.Stat(filepath.Join(w.dir, "argv-"+strconv.Itoa(pid)))
		if err != nil || !st.ModTime().After(newest) {
			continue
		}
		newest, port = st.ModTime(), argv[slices.Index(argv, "-p")+1]
	}
	if port == "" {
		t.Fatal("no rpc-server started")
	}
	return port
}

// stranger connects straight to the rpc-server's port, sends HELLO (or nothing, idle) and
// returns what it reads until the connection ends.
func stranger(t *testing.T, port string, hello bool) <-chan []byte {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatalf("a stranger's connection to the rpc-server: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if hello {
		if _, err := c.Write(ggmlrpc.Hello()); err != nil {
			t.Fatalf("a stranger's HELLO: %v", err)
		}
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(c)
		got <- b
	}()
	return got
}

// TestRPCServerServesOnlyTheLink (held, as where no network namespace can be made): a process that
// connects to the rpc-server's port itself gets no answer to its HELLO, before, during and after a
// head's session, and its connection ends (the rpc-server is killed after the session and started
// on another port) without a byte; an idle one does not hold the rpc-server from the head.
func TestRPCServerServesOnlyTheLink(t *testing.T) {
	w := startWorkerHeld(t, true)
	e := openEnd(t, "gpu1", w.addr)
	port := w.rpcPort(t)
	direct := stranger(t, port, true)
	idle := stranger(t, port, false)

	c := dialEnd(t, e) // the head's HELLO answered: the stranger's came first and is not
	echoRound(t, c, "the head's session")
	during := stranger(t, port, true)
	echoRound(t, c, "still the head's")
	c.Close()
	for name, ch := range map[string]<-chan []byte{"before": direct, "idle": idle, "during": during} {
		select {
		case b := <-ch:
			if len(b) != 0 {
				t.Fatalf("a stranger's connection (%s the session) got %q from the rpc-server", name, b)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("a stranger's connection (%s the session) still open 15 s after the session ended", name)
		}
	}
	c2 := dialEnd(t, e)
	echoRound(t, c2, "the next session")
	if n := len(w.fakeArgv(t)); n != 2 || w.rpcPort(t) == port {
		t.Fatalf("%d rpc-servers started, the last on %s; want a second one, on another port than %s", n, w.rpcPort(t), port)
	}
	select {
	case err := <-e.Lost():
		t.Fatalf("Lost: %v", err)
	default:
	}
}

// TestStrangerBeforeTheWorkerIsDetected: an rpc-server that says it served a connection other
// than the worker's own is killed and started on a new port.
func TestStrangerBeforeTheWorkerIsDetected(t *testing.T) {
	s := &strangers{seen: make(chan struct{})}
	for _, l := range []string{"Starting RPC server", "Accepted client connection"} {
		s.line(l)
	}
	select {
	case <-s.seen:
		t.Fatal("the worker's own connection taken for a stranger's")
	default:
	}
	s.line("Client connection closed") // the worker's own is never closed while it holds it: this was another's
	select {
	case <-s.seen:
	default:
		t.Fatal("a connection closed while the worker holds its own not taken for a stranger's")
	}
	s.line("Accepted client connection") // once only
}
