//go:build unix

package child

import (
	"errors"
	"io"
	"os"
	"sync"
	"testing"
)

// TestLogReaderWaitsAndWakes: readNow says empty without waiting; a Read waiting on the empty pipe
// returns for bytes, a kick, stop and the write end's close, each with its own answer.
func TestLogReaderWaitsAndWakes(t *testing.T) {
	r, w, err := newLogPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	buf := make([]byte, 64)
	if _, err := r.readNow(buf); !errors.Is(err, errEmpty) {
		t.Fatalf("readNow on an empty pipe = %v; want errEmpty", err)
	}
	read := func(then func()) (int, error) {
		type res struct {
			n   int
			err error
		}
		ch := make(chan res, 1)
		go func() { n, err := r.Read(buf); ch <- res{n, err} }()
		then()
		got := <-ch
		return got.n, got.err
	}
	if n, err := read(func() { _, _ = w.WriteString("hello") }); n != 5 || err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("Read after a write = %d %v %q", n, err, buf[:n])
	}
	if _, err := read(r.kick); !errors.Is(err, errKicked) {
		t.Fatalf("Read ended by kick = %v; want errKicked", err)
	}
	if _, err := read(func() { w.Close() }); !errors.Is(err, io.EOF) {
		t.Fatalf("Read after the write end closed = %v; want io.EOF", err)
	}

	r2, w2, err := newLogPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	r = r2
	if _, err := read(r2.stop); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Read ended by stop = %v; want os.ErrClosed", err)
	}
	r2.close()
	r2.kick() // after close: nothing to write to, and no panic
	r2.close()
}

// TestLogReaderKickRacesClose: kicks from other goroutines while the owner closes; the race
// detector and a leak check (every descriptor closed once) watch it.
func TestLogReaderKickRacesClose(t *testing.T) {
	for range 200 {
		r, w, err := newLogPipe()
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(r.kick)
		}
		r.close()
		wg.Wait()
		w.Close()
	}
	// Every kick pipe was released: a new pipe gets low descriptors again, not ever higher ones.
	r, w, err := newLogPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer r.close()
	if r.kickW > 200 {
		t.Fatalf("descriptor %d after 200 pipes opened and closed: a pipe end leaked", r.kickW)
	}
}
