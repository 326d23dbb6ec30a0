//go:build unix

package rawio

import (
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
)

// ReadNow on a non-blocking pipe: nothing yet, what was written, the end once the writer closed,
// and an error for a descriptor that is not open.
func TestReadNow(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r, w := fds[0], fds[1]
	defer syscall.Close(r)
	if err := syscall.SetNonblock(r, true); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, err := ReadNow(r, buf); n != 0 || !errors.Is(err, ErrEmpty) {
		t.Fatalf("an empty pipe: %d, %v", n, err)
	}
	if _, err := syscall.Write(w, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if n, err := ReadNow(r, buf); n != 3 || err != nil || string(buf[:n]) != "abc" {
		t.Fatalf("a pipe holding abc: %d %q, %v", n, buf[:n], err)
	}
	if n, err := ReadNow(r, nil); n != 0 || err != nil {
		t.Fatalf("an empty read: %d, %v", n, err)
	}
	syscall.Close(w)
	if n, err := ReadNow(r, buf); n != 0 || err != io.EOF {
		t.Fatalf("a pipe whose writer closed: %d, %v", n, err)
	}
	var se *os.SyscallError
	if _, err := ReadNow(w, buf); !errors.As(err, &se) || !errors.Is(err, syscall.EBADF) {
		t.Fatalf("a closed descriptor: %v", err)
	}
}
