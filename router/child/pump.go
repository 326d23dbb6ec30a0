package child

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"
)

// stderrPace is how long the stderr reader waits after each read before reading again, while the
// process runs. llama-server writes every log line as three unbuffered writes (timestamp, level,
// text) and about ten lines per request, so reading as soon as bytes arrive costs the router ~30
// wakeups and reads per proxied request. Waiting lets one read take everything written meanwhile
// (at most 64 KiB, the pipe's buffer; a full pipe only blocks llama-server's log thread, never its
// inference). Log lines reach the ring at most this late; state lines come on stdout, unpaced.
//
// The pipe's read end is not in Go's network poller (logpipe_unix.go): a pollable pipe would wake
// the poller at every one of those writes even while the reader paces, which cost the router about
// four wakeups, and a fifth of its CPU, per proxied request.
const stderrPace = 25 * time.Millisecond

// errKicked says a Read waiting on an empty pipe was ended by kick; errEmpty that readNow found the
// pipe empty; errNoPeek that the pipe cannot tell (Windows: a catch-up there waits for its bound,
// unless the process ends first).
var (
	errKicked = errors.New("log pipe read kicked")
	errEmpty  = errors.New("log pipe empty")
	errNoPeek = errors.New("log pipe cannot tell whether it is empty")
)

// stderrPump reads a process's stderr from a pipe it owns, instead of the copying goroutine of
// os/exec, which reads eagerly.
type stderrPump struct {
	r      *logReader    // read end; closed by run (or abort)
	w      *os.File      // write end, handed to the process; closed after Start
	done   chan struct{} // closed when run returned (EOF, or the read end stopped)
	exited chan struct{} // closed when the process was reaped: stop pacing, drain
	wake   chan struct{} // capacity 1: a catch-up was asked for; stop pacing and read now

	mu      sync.Mutex      // guards pending
	pending []chan struct{} // catch-ups waiting for the pipe to be read empty
}

func newStderrPump() (*stderrPump, error) {
	r, w, err := newLogPipe()
	if err != nil {
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	return &stderrPump{r: r, w: w, done: make(chan struct{}), exited: make(chan struct{}), wake: make(chan struct{}, 1)}, nil
}

// catchUp returns once run has read everything the process wrote to stderr before the call, or
// after at most max (where the pipe cannot say it is empty, or run is stuck writing).
func (s *stderrPump) catchUp(max time.Duration) {
	ack := make(chan struct{})
	s.mu.Lock()
	s.pending = append(s.pending, ack)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	s.r.kick() // a Read waiting on an empty pipe returns, and run reads the pipe empty
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-ack:
		return
	case <-s.done:
	case <-t.C:
	}
	s.mu.Lock() // not answered: it waits no more
	if i := slices.Index(s.pending, ack); i >= 0 {
		s.pending = slices.Delete(s.pending, i, i+1)
	}
	s.mu.Unlock()
}

// wanted says whether a catch-up waits.
func (s *stderrPump) wanted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) > 0
}

// caughtUp answers the catch-ups waiting: the pipe was just found empty.
func (s *stderrPump) caughtUp() {
	s.mu.Lock()
	acks := s.pending
	s.pending = nil
	s.mu.Unlock()
	for _, a := range acks {
		close(a)
	}
}

// run copies the pipe into sink until EOF; it owns the read end.
func (s *stderrPump) run(sink io.Writer) {
	defer close(s.done)
	defer s.r.close()
	buf := make([]byte, 64<<10)
	pace := time.NewTimer(stderrPace)
	pace.Stop()
	defer pace.Stop()
	paced := true
	for {
		n, err := s.r.Read(buf)
		if n > 0 {
			_, _ = sink.Write(buf[:n])
		}
		if err != nil && !errors.Is(err, errKicked) {
			return // io.EOF once the process and anything it started closed the pipe
		}
		if s.wanted() {
			if s.drain(buf, sink) != nil {
				return
			}
			continue
		}
		if !paced || n == 0 {
			continue
		}
		pace.Reset(stderrPace)
		select {
		case <-pace.C:
		case <-s.wake:
			pace.Stop()
		case <-s.exited:
			paced = false
		}
	}
}

// drain reads what the pipe holds into sink without waiting, and answers the catch-ups once it is
// empty. An error ends run; errNoPeek (the pipe cannot say it is empty) leaves the catch-ups to
// their bound.
func (s *stderrPump) drain(buf []byte, sink io.Writer) error {
	for {
		n, err := s.r.readNow(buf)
		if n > 0 {
			_, _ = sink.Write(buf[:n])
		}
		switch {
		case errors.Is(err, errEmpty):
			s.caughtUp()
			return nil
		case errors.Is(err, errNoPeek):
			return nil
		case err != nil:
			return err
		}
	}
}

// wait reaps cmd and then waits for the stderr pipe to reach EOF, at most waitDelay, like os/exec
// does for pipes it copies itself. A pipe still held open (by a grandchild) is given up and reported
// as exec.ErrWaitDelay when the process itself exited cleanly.
func (s *stderrPump) wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	close(s.exited)
	t := time.NewTimer(waitDelay)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		s.r.stop() // ends the Read
		<-s.done
		if err == nil {
			err = exec.ErrWaitDelay
		}
	}
	return err
}

// abort releases both ends when the process was never started.
func (s *stderrPump) abort() {
	_ = s.w.Close()
	s.r.close()
}
