//go:build !unix

package cli

import "testing"

// interruptSelf: a process cannot send itself Ctrl-C here (on Windows it goes to the whole
// console), so the tests that need it run on unix only; Wine's TestConsoleServeCtrlC covers serve.
func interruptSelf(t *testing.T) {
	t.Helper()
	t.Skip("sending this process Ctrl-C is tested on unix")
}
