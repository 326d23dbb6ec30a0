//go:build linux && !race

package rawsock

import (
	"io"
	"net"
	"os"
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
	return &conn{Conn: c, rc: rc, net: network}
}

func (c *conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(p) > maxRW {
		p = p[:maxRW]
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			n, errno = int(r), e
			return true
		}
	})
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

func (c *conn) Write(p []byte) (int, error) {
	var nn int
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for nn < len(p) {
			chunk := p[nn:]
			if len(chunk) > maxRW {
				chunk = chunk[:maxRW]
			}
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&chunk[0])), uintptr(len(chunk)))
			switch e {
			case 0:
				if r == 0 {
					errno = syscall.EIO // a stream socket never writes nothing without an error
					return true
				}
				nn += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return nn, err
	case errno != 0:
		return nn, c.opError("write", os.NewSyscallError("write", errno))
	}
	return nn, nil
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
