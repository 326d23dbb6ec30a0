//go:build windows

package hub

import (
	"errors"

	"golang.org/x/sys/windows"
)

// isRefused reports a connection the other end refused (Winsock's own error number).
func isRefused(err error) bool { return errors.Is(err, windows.WSAECONNREFUSED) }
