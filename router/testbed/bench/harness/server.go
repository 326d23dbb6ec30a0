package harness

import (
	"errors"
	"os"
	"os/exec"
	"time"
)

// server is a process a harness started and reaps: a llama-server started by hand or Llamatray.
type server struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process is reaped
	err  error         // Wait's result, set before done closes
	log  *os.File      // its output; closed by stop
}

// startServer starts cmd, its output going to log, and reaps it in the background.
func startServer(cmd *exec.Cmd, log *os.File) (*server, error) {
	cmd.Stdout, cmd.Stderr = log, log
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan struct{}), log: log}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	return s, nil
}

// stop sends sig, then SIGKILL to the process group after grace, and waits until the process is
// reaped.
func (s *server) stop(sig os.Signal, grace time.Duration) {
	defer s.log.Close()
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(sig)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		killGroup(s.cmd)
		<-s.done
	}
}

// Exited reports whether the process ended, and how.
func (s *server) Exited() (bool, error) {
	select {
	case <-s.done:
		var ee *exec.ExitError
		if errors.As(s.err, &ee) && ee.ExitCode() == -1 {
			return true, nil // killed by our own signal
		}
		return true, s.err
	default:
		return false, nil
	}
}

// CPU is the CPU time (user + system) the process has used so far; ok is false where /proc cannot
// tell (other systems).
func (s *server) CPU() (time.Duration, bool) { return procCPU(s.cmd.Process.Pid) }
