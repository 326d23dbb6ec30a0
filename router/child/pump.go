package child

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// stderrPace is how long the stderr reader waits after each read before reading again, while the
// process runs. llama-server writes every log line as three unbuffered writes (timestamp, level,
// text) and about ten lines per request, so reading as soon as bytes arrive costs the router ~30
// wakeups and reads per proxied request. Waiting lets one read take everything written meanwhile
// (at most 64 KiB, the pipe's buffer; a full pipe only blocks llama-server's log thread, never its
// inference). Log lines reach the ring at most this late; state lines come on stdout, unpaced.
const stderrPace = 25 * time.Millisecond

// stderrPump reads a process's stderr from a pipe it owns, instead of the copying goroutine of
// os/exec, which reads eagerly.
type stderrPump struct {
	r      *os.File      // read end; closed by run
	w      *os.File      // write end, handed to the process; closed after Start
	done   chan struct{} // closed when run returned (EOF, or r closed)
	exited chan struct{} // closed when the process was reaped: stop pacing, drain
	wake   chan struct{} // capacity 1: a catch-up was asked for; stop pacing and read now

	mu      sync.Mutex      // guards pending
	pending []chan struct{} // catch-ups waiting for the pipe to be read empty
}

// drainWindow is how long a read waits on an empty pipe when a catch-up asked for everything
// written so far: the pipe is then known to be read empty.
const drainWindow = 2 * time.Millisecond

func newStderrPump() (*stderrPump, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	return &stderrPump{r: r, w: w, done: make(chan struct{}), exited: make(chan struct{}), wake: make(chan struct{}, 1)}, nil
}

// catchUp returns once run has read everything the process wrote to stderr before the call, or
// after at most max (where the pipe takes no read deadline, or run is stuck writing).
func (s *stderrPump) catchUp(max time.Duration) {
	ack := make(chan struct{})
	s.mu.Lock()
	s.pending = append(s.pending, ack)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	// A Read waiting on an empty pipe returns at this deadline: what was written is read by then.
	_ = s.r.SetReadDeadline(time.Now().Add(drainWindow))
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-ack:
	case <-s.done:
	case <-t.C:
	}
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
	defer s.r.Close()
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
		if errors.Is(err, os.ErrDeadlineExceeded) { // a catch-up's read found the pipe empty
			_ = s.r.SetReadDeadline(time.Time{})
			s.caughtUp()
			continue
		}
		if err != nil {
			return // io.EOF once the process and anything it started closed the pipe
		}
		if !paced {
			continue
		}
		pace.Reset(stderrPace)
		select {
		case <-pace.C:
		case <-s.wake:
			pace.Stop()
			_ = s.r.SetReadDeadline(time.Now().Add(drainWindow))
		case <-s.exited:
			paced = false
		}
	}
}

// wait reaps cmd and then waits for the stderr pipe to reach EOF, at most waitDelay, like os/exec
// does for pipes it copies itself. A pipe still held open (by a grandchild) is closed and reported as
// exec.ErrWaitDelay when the process itself exited cleanly.
func (s *stderrPump) wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	close(s.exited)
	t := time.NewTimer(waitDelay)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		_ = s.r.Close() // unblocks the Read
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
	_ = s.r.Close()
}
