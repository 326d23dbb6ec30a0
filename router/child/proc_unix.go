//go:build unix

package child

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// canSignal says the platform can ask a process to stop with a signal.
const canSignal = true

// osProc is the platform handle of a child: on unix, its process group. Each
// child leads its own group (Setpgid), so signals reach anything it spawned
// and a Ctrl-C in Llamatray's terminal does not reach the children.
type osProc struct {
	proc *os.Process
	pgid int
}

// exitCode is the exit code of a reaped child, -1 when a signal killed it.
func exitCode(st *os.ProcessState) int { return st.ExitCode() }

// attach returns the handle of a started child.
func attach(cmd *exec.Cmd) (*osProc, error) {
	return &osProc{proc: cmd.Process, pgid: cmd.Process.Pid}, nil
}

// terminate sends SIGTERM to the child's process group.
func (o *osProc) terminate() error {
	return signalGroup(o.pgid, syscall.SIGTERM)
}

// kill sends SIGKILL to the child's process group, and to the child itself
// in case it left the group.
func (o *osProc) kill() error {
	gerr := signalGroup(o.pgid, syscall.SIGKILL)
	if err := o.proc.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return errors.Join(gerr, fmt.Errorf("kill pid %d: %w", o.proc.Pid, err))
	}
	return gerr
}

// release runs after the child was reaped. leftovers says Wait gave up on
// output pipes that something else still held: the group still has members
// (so its ID cannot have been reused), and they are killed.
func (o *osProc) release(leftovers bool) {
	if leftovers {
		_ = signalGroup(o.pgid, syscall.SIGKILL)
	}
}

// signalGroup signals every process in group pgid; a group that is already
// gone is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return fmt.Errorf("refusing to signal process group %d", pgid)
	}
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d with %v: %w", pgid, sig, err)
	}
	return nil
}
