//go:build windows

package neterr

import (
	"errors"

	"golang.org/x/sys/windows"
)

// Refused reports a connection the other end refused (Winsock's own error number).
func Refused(err error) bool { return errors.Is(err, windows.WSAECONNREFUSED) }

// Reset reports a connection the other end reset (Winsock's own error number).
func Reset(err error) bool { return errors.Is(err, windows.WSAECONNRESET) }
