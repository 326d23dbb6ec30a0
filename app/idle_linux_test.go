//go:build linux

package app

import (
	"os"
	"testing"
	"time"
)

// waitAsync runs a park of up to an hour and returns what ended it on the channel.
func waitAsync(w *waker, x xConn) <-chan wakeReason {
	done := make(chan wakeReason, 1)
	go func() { done <- w.wait(x, time.Hour) }()
	return done
}

func wantWake(t *testing.T, done <-chan wakeReason, want wakeReason, what string) {
	t.Helper()
	select {
	case got := <-done:
		if got != want {
			t.Fatalf("%s: the park ended by %d, want %d", what, got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the park goes on", what)
	}
}

// A park waits on the X connection's socket as well as for kicks: an event the server sends wakes
// it at once, an event Xlib already read does not wait at all, and a kick wakes it too. A pipe
// stands in for the X socket.
func TestParkWakesOnX(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	queued := false // what Xlib holds, read already
	x := xConn{fd: int(r.Fd()), pending: func() bool { return queued }}
	wk := newWaker()

	done := waitAsync(wk, x)
	wk.kick()
	wantWake(t, done, wokeKick, "a kick")

	done = waitAsync(wk, x)
	if _, err := w.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	wantWake(t, done, wokeX, "an event on the X socket")
	if _, err := r.Read(make([]byte, 1)); err != nil { // as Fyne's loop reads the event
		t.Fatal(err)
	}

	queued = true
	wantWake(t, waitAsync(wk, x), wokeX, "an event Xlib already read")
	queued = false

	wk.kick() // before the park begins
	wantWake(t, waitAsync(wk, x), wokeKick, "a kick before the park")
}
