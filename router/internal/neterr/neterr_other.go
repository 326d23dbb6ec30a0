//go:build !windows

package neterr

import (
	"errors"
	"syscall"
)

// Refused reports a connection the other end refused.
func Refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// Reset reports a connection the other end reset.
func Reset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
