//go:build linux && !race

package rawio

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// Enabled says whether Wrap wraps in this build.
const Enabled = true

// maxRW bounds one read or write, as the poller's own (1 GiB).
const maxRW = 1 << 30

// conn is a stream socket whose Read and Write make their system calls raw (see the package).
type conn struct {
	net.Conn
	rc  syscall.RawConn
	net string // "tcp" or "unix", for errors

	rmu sync.Mutex // guards r: one Read at a time
	r   op
	wmu sync.Mutex // guards w: one Write at a time
	w   op
}

// op is a read or write in progress: its buffer, what it did, and the poller's callback that does
// it, bound once per connection so that a call makes no closure.
type op struct {
	p     []byte
	n     int
	errno syscall.Errno
	call  func(fd uintptr) bool
}

func wrap(c net.Conn) net.Conn {
	if _, done := c.(*conn); done {
		return c
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	network := "tcp"
	if _, ok := c.(*net.UnixConn); ok {
		network = "unix"
	}
	w := &conn{Conn: c, rc: rc, net: network}
	w.r.call, w.w.call = w.r.read, w.w.write
	return w
}

func (c *conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(p) > maxRW {
		p = p[:maxRW]
	}
	n, errno, err := c.run(&c.rmu, &c.r, p, false)
	switch {
	case err != nil:
		return 0, err // the poller's: a deadline, or the connection closed
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// run does o over p under mu, through the poller's raw read or write, which calls o.call until it
// reports done: what it did, the system call's error, and the poller's (a deadline, a close).
func (c *conn) run(mu *sync.Mutex, o *op, p []byte, write bool) (int, syscall.Errno, error) {
	mu.Lock()
	defer mu.Unlock()
	o.p, o.n, o.errno = p, 0, 0
	var err error
	if write {
		err = c.rc.Write(o.call)
	} else {
		err = c.rc.Read(o.call)
	}
	n, errno := o.n, o.errno
	o.p = nil
	return n, errno, err
}

// read reads once into o.p; false: nothing to read yet (the poller waits, then calls it again).
func (o *op) read(fd uintptr) bool {
	for {
		n, e := readNow(int(fd), o.p)
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		o.n, o.errno = n, e
		return true
	}
}

// readNow is one raw read(2) of fd into p (not empty).
func readNow(fd int, p []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(r), e
}

func (c *conn) Write(p []byte) (int, error) {
	n, errno, err := c.run(&c.wmu, &c.w, p, true)
	switch {
	case err != nil:
		return n, err
	case errno != 0:
		return n, c.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// write writes the rest of o.p; false: the socket's buffer is full (the poller waits for room,
// then calls it again).
func (o *op) write(fd uintptr) bool {
	for o.n < len(o.p) {
		chunk := o.p[o.n:]
		if len(chunk) > maxRW {
			chunk = chunk[:maxRW]
		}
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&chunk[0])), uintptr(len(chunk)))
		switch e {
		case 0:
			if r == 0 {
				o.errno = syscall.EIO // a stream socket never writes nothing without an error
				return true
			}
			o.n += int(r)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			o.errno = e
			return true
		}
	}
	return true
}

// opError is err as the net package reports a failed read or write.
func (c *conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.net, Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// CloseWrite half-closes the connection where the wrapped one can.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.opError("close", syscall.EINVAL)
}

// Unwrap is the wrapped connection.
func (c *conn) Unwrap() net.Conn { return c.Conn }
