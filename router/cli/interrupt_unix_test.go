//go:build unix

package cli

import (
	"os"
	"syscall"
	"testing"
)

// interruptSelf sends this test process SIGINT, as Ctrl-C in a terminal does; the command under
// test has its handler by then.
func interruptSelf(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
}
