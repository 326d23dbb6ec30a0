//go:build unix

package child

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/llamatray/llamatray/router/internal/rawio"
)

// logReader is the read end of a child's stderr, kept out of Go's network poller: a Read waits in
// poll(2) on the pipe and on a kick pipe of its own, so bytes written while nobody reads wake
// nothing, and another goroutine can end the wait (kick, stop) without closing the descriptor
// under it.
type logReader struct {
	fd, kickR, kickW int // the pipe's read end and the kick pipe, all non-blocking

	mu      sync.Mutex // guards stopped, closed and kicking
	stopped bool       // stop was called: Read returns os.ErrClosed
	closed  bool       // close was called: the descriptors are released
	kicking int        // kicks writing to kickW now
}

// newLogPipe makes the pipe a child's stderr goes to: the write end for the child, as an *os.File
// (blocking, not in the poller), the read end for the pump.
func newLogPipe() (*logReader, *os.File, error) {
	var p, k [2]int
	// Under ForkLock, as os.Pipe does where pipe2 is missing: no child started meanwhile inherits
	// the descriptors before they are close-on-exec.
	syscall.ForkLock.RLock()
	err := unix.Pipe(p[:])
	if err == nil {
		if err = unix.Pipe(k[:]); err != nil {
			unix.Close(p[0])
			unix.Close(p[1])
		}
	}
	if err == nil {
		for _, fd := range []int{p[0], p[1], k[0], k[1]} {
			unix.CloseOnExec(fd)
		}
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	for _, fd := range []int{p[0], k[0], k[1]} {
		if err := unix.SetNonblock(fd, true); err != nil {
			for _, fd := range []int{p[0], p[1], k[0], k[1]} {
				unix.Close(fd)
			}
			return nil, nil, fmt.Errorf("pipe: %w", err)
		}
	}
	return &logReader{fd: p[0], kickR: k[0], kickW: k[1]}, os.NewFile(uintptr(p[1]), "|1"), nil
}

// Read returns what the pipe holds, waiting for at least one byte, EOF (io.EOF), a kick (errKicked)
// or stop (os.ErrClosed). Only the pump's run calls it.
func (r *logReader) Read(p []byte) (int, error) {
	for {
		n, err := r.readNow(p)
		if !errors.Is(err, errEmpty) {
			return n, err
		}
		fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}, {Fd: int32(r.kickR), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil && !errors.Is(err, unix.EINTR) {
			return 0, fmt.Errorf("poll: %w", err)
		}
		if fds[1].Revents != 0 {
			r.unkick()
			if r.isStopped() {
				return 0, os.ErrClosed
			}
			return 0, errKicked
		}
	}
}

// readNow returns what the pipe holds without waiting: errEmpty when it holds nothing.
func (r *logReader) readNow(p []byte) (int, error) {
	if r.isStopped() {
		return 0, os.ErrClosed
	}
	// Raw where the build allows it: under load the pump reads here every stderrPace, and a read
	// through the syscall package would wake the runtime's monitor thread each time (rawio).
	n, err := rawio.ReadNow(r.fd, p)
	switch {
	case errors.Is(err, rawio.ErrEmpty):
		return 0, errEmpty
	case err != nil && err != io.EOF:
		return 0, fmt.Errorf("read: %w", err)
	}
	return n, err
}

// kick ends a Read waiting on an empty pipe (or the next one, when none waits). The write happens
// outside mu; the kick pipe's write end is released by whichever of kick and close comes last.
func (r *logReader) kick() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.kicking++
	r.mu.Unlock()
	_, _ = unix.Write(r.kickW, []byte{0}) // a full kick pipe is already a kick
	r.mu.Lock()
	r.kicking--
	last := r.closed && r.kicking == 0
	r.mu.Unlock()
	if last {
		unix.Close(r.kickW)
	}
}

// unkick empties the kick pipe.
func (r *logReader) unkick() {
	var b [64]byte
	for {
		if n, err := unix.Read(r.kickR, b[:]); n <= 0 || err != nil {
			return
		}
	}
}

// stop makes Read return os.ErrClosed, now if it waits.
func (r *logReader) stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.kick()
}

func (r *logReader) isStopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// close releases the descriptors; the owner calls it once no Read runs.
func (r *logReader) close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed, r.stopped = true, true
	kicked := r.kicking > 0 // that kick releases kickW
	r.mu.Unlock()
	unix.Close(r.fd)
	unix.Close(r.kickR)
	if !kicked {
		unix.Close(r.kickW)
	}
}
