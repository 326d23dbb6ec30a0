//go:build !windows

package cli

// attachConsole does nothing outside Windows: a program there always has the standard handles of
// the terminal it was started from.
func attachConsole() {}
