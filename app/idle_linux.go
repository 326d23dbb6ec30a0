//go:build linux

package app

import (
	"encoding/binary"
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// waker on Linux: kicks count up an eventfd, and a park polls it together with the X connection's
// socket, so that either wakes the UI thread at once.
type waker struct {
	efd int // eventfd, non-blocking; -1 when it could not be made (a park then waits out its bound)
}

func newWaker() *waker {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		fd = -1
	}
	return &waker{efd: fd}
}

func (w *waker) kick() {
	if w.efd >= 0 {
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		unix.Write(w.efd, one[:]) // EAGAIN only when the counter is full: already kicked
	}
}

// wait returns at once when kicked since the last wait or when Xlib holds events it has read;
// else it polls the eventfd and the X socket for at most d.
func (w *waker) wait(x xConn, d time.Duration) wakeReason {
	if w.drain() {
		return wokeKick
	}
	if x.fd >= 0 && x.pending() {
		return wokeX
	}
	fds := make([]unix.PollFd, 0, 2)
	if w.efd >= 0 {
		fds = append(fds, unix.PollFd{Fd: int32(w.efd), Events: unix.POLLIN})
	}
	if x.fd >= 0 {
		fds = append(fds, unix.PollFd{Fd: int32(x.fd), Events: unix.POLLIN})
	}
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return wokeTimeout
		}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue // a signal (the Go runtime preempts with SIGURG): poll again for what is left
		}
		if err != nil || n == 0 {
			return wokeTimeout
		}
		if w.drain() {
			return wokeKick
		}
		return wokeX
	}
}

// drain reads the eventfd's count back to zero and reports whether there was one.
func (w *waker) drain() bool {
	if w.efd < 0 {
		return false
	}
	var buf [8]byte
	n, err := unix.Read(w.efd, buf[:])
	return err == nil && n == 8
}
