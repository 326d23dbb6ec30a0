//go:build !linux

package worker

import (
	"errors"
	"os/exec"
)

func probeIsolation() (string, error) {
	return IsolationHeld, errors.New("network namespaces are Linux's")
}

// command is argv itself: only Linux runs it in a network namespace of its own.
func (c *rpcChild) command(argv []string) (*exec.Cmd, handover, error) {
	return exec.Command(argv[0], argv[1:]...), nil, nil
}
