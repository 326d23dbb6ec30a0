//go:build !windows

package hub

import (
	"errors"
	"syscall"
)

// isRefused reports a connection the other end refused.
func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
