package child

import (
	"errors"
	"log/slog"
	"os/exec"
	"runtime"
	"strings"
)

// Process is a child other than llama-server (a worker's rpc-server), spawned as a Child's
// processes are: its own process group (Windows: a kill-on-close job object), killed with this
// process (Linux: Pdeathsig, from a goroutine that keeps its OS thread until the process is
// reaped), its output (stdout and stderr merged) split into lines, each logged, handed to the
// caller and kept for Tail.
type Process struct {
	cmd     *exec.Cmd
	os      *osProc
	log     *slog.Logger
	ring    *ring
	onLine  func(string)
	out     *lineSink
	started chan struct{} // closed once cmd started (or failed to): pid and log are set
	done    chan struct{} // closed after the process is reaped
	err     error         // cmd.Wait's error; written before done closes
}

// StartProcess starts cmd (its argv, and SysProcAttr where it needs more, such as namespaces,
// than configure adds) and returns once it runs, or cmd.Start's error. onLine gets each output
// line, in order, from another goroutine; the last tailLines are kept for Tail.
func StartProcess(cmd *exec.Cmd, log *slog.Logger, tailLines int, onLine func(string)) (*Process, error) {
	p := &Process{cmd: cmd, log: log, ring: newRing(max(tailLines, 1)), onLine: onLine,
		started: make(chan struct{}), done: make(chan struct{})}
	p.out = &lineSink{p: p}
	cmd.Stdout, cmd.Stderr = p.out, p.out // one pipe: os/exec sees the same writer
	errc := make(chan error, 1)
	go p.own(errc)
	if err := <-errc; err != nil {
		return nil, err
	}
	return p, nil
}

// own is the process's one goroutine: it starts it, waits for it and reaps it, on one locked OS
// thread (the parent a Linux Pdeathsig watches).
func (p *Process) own(errc chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(p.done)
	var err error
	p.os, p.log, err = launch(p.cmd, p.log)
	close(p.started)
	if err != nil {
		p.err = err
		errc <- err
		return
	}
	errc <- nil
	p.err = p.cmd.Wait()
	if l, ok := p.out.takePartial(); ok {
		p.line(l)
	}
	p.os.release(errors.Is(p.err, exec.ErrWaitDelay))
}

// wrote waits until the pid is known (lineSink calls it before splitting lines).
func (p *Process) wrote() { <-p.started }

func (p *Process) line(l string) {
	p.log.Debug("child output", "line", l)
	p.onLine(l)
	p.ring.keep(l)
}

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Kill kills the process's whole group (Windows: its job) now; Done closes once it is reaped.
func (p *Process) Kill() {
	select {
	case <-p.done: // reaped: its group may be another's by now
		return
	default:
	}
	if err := p.os.kill(); err != nil {
		p.log.Warn("kill child", "err", err)
	}
}

// Done is closed after the process is reaped, its output all handed over.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process ended (cmd.Wait's error), once Done is closed.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// Tail is the last kept output lines, joined with " | " ("(no output)" when there were none).
func (p *Process) Tail() string {
	lines := p.ring.snapshot()
	if len(lines) == 0 {
		return "(no output)"
	}
	return strings.Join(lines, " | ")
}
