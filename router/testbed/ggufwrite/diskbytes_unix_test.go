//go:build unix

package ggufwrite

import (
	"os"
	"syscall"
	"testing"
)

// diskBytes returns the disk space a file takes.
func diskBytes(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		t.Skip("no block counts on this system")
	}
	return sys.Blocks * 512
}
