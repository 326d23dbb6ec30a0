package child

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// waitDelay bounds how long Wait waits for output pipes after the process
// exited, in case a grandchild still holds them.
const waitDelay = 2 * time.Second

// proc is one process of a Child; a bind failure starts a new one.
type proc struct {
	cmd    *exec.Cmd
	os     *osProc // platform handle: process group or job object
	stdin  io.WriteCloser
	pid    int
	addr   Addr
	log    *slog.Logger // with model and pid; set before started is closed
	ring   *ring
	stdout *lineSink
	stderr *lineSink
	pump   *stderrPump // reads stderr into the stderr sink

	started chan struct{}    // closed once pid and log are set (or the start failed)
	quit    chan struct{}    // closed when the supervisor stops watching this process
	states  chan stateMsg    // state lines, in output order
	waitCh  chan error       // the result of cmd.Wait, exactly once
	probes  chan probeResult // capacity 1: at most one probe is in flight

	buffers    bufferReport // the child's report of its device buffers, read until it is ready
	bindFailed atomic.Bool  // an output line said the address could not be bound
	loaded     atomic.Bool  // it became ready: output lines are no longer checked for a bind failure
	lastOutput atomic.Int64 // unix nanoseconds of the last output bytes
}

// touch records output activity, which extends the load timeout.
func (p *proc) touch() { p.lastOutput.Store(time.Now().UnixNano()) }

// supervise is the child's supervisor goroutine. It reports the first start to
// Start through started and then owns the process until it is reaped.
func (c *Child) supervise(started chan<- error) {
	// Linux: Pdeathsig is tied to the forking thread; keep it until the child is reaped.
	runtime.LockOSThread()
	var last Event // identity and exit code of the previous process, for a failed restart
	for attempt := 0; ; attempt++ {
		addr, err := c.spec.Addrs.Get()
		var p *proc
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrStart, err)
		} else if p, err = c.spawn(addr); err != nil {
			c.spec.Addrs.Put(addr)
		}
		if err != nil {
			runtime.UnlockOSThread()
			if attempt == 0 {
				close(c.done)
				started <- fmt.Errorf("child %q: %w", c.spec.Model, err)
				return
			}
			last.Err = fmt.Errorf("restart on a new address after a bind failure: %w", err)
			c.finish(last)
			return
		}
		if attempt == 0 {
			started <- nil
		}
		out := c.run(p)
		c.spec.Addrs.Put(addr)
		if c.stopLevel.Load() != stopNone {
			out.deliberate = true // a Stop between the exit and now: no restart either
		}
		ev := c.exitEvent(p, out, attempt)
		if out.bindFailed && !out.deliberate && attempt < MaxBindRetries {
			p.log.Warn("llama-server could not bind its address; restarting it on another",
				"addr", addr, "retry", attempt+1, "of", MaxBindRetries)
			last = ev
			continue
		}
		runtime.UnlockOSThread()
		c.finish(ev)
		return
	}
}

// finish delivers the final Exited event and closes Done.
func (c *Child) finish(ev Event) {
	ev.Kind = Exited
	if ev.LogTail == nil {
		ev.LogTail = c.ring.tail(LogTailLines)
	}
	if ev.Err != nil {
		c.log.Warn("llama-server exited", "pid", ev.PID, "addr", ev.Addr, "code", ev.ExitCode, "err", ev.Err)
	} else {
		c.log.Info("llama-server exited", "pid", ev.PID, "addr", ev.Addr, "code", ev.ExitCode, "deliberate", ev.Deliberate)
	}
	c.onEvent(ev)
	close(c.done)
}

// spawn starts one process listening at addr.
func (c *Child) spawn(addr Addr) (*proc, error) {
	args := append(append([]string(nil), c.spec.Args...), addr.hostArgs()...)
	cmd := exec.Command(c.spec.Binary, args...)
	cmd.Env = append(append(os.Environ(), c.spec.Env...), RouterPortEnv+"="+strconv.Itoa(c.spec.RouterPort))
	p := &proc{
		cmd:     cmd,
		addr:    addr,
		ring:    c.ring,
		started: make(chan struct{}),
		quit:    make(chan struct{}),
		states:  make(chan stateMsg, 16),
		waitCh:  make(chan error, 1),
		probes:  make(chan probeResult, 1),
	}
	p.stdout = &lineSink{p: p}
	p.stderr = &lineSink{p: p}
	// stdout (state lines) is copied by os/exec as it comes; stderr (the log) by a paced reader.
	errPump, err := newStderrPump()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	cmd.Stdout, cmd.Stderr = p.stdout, errPump.w
	// The pipe stays open for the child's whole life: llama-server exits on stdin EOF.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		errPump.abort()
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	p.stdin = stdin
	p.touch()
	if p.os, p.log, err = launch(cmd, c.log); err != nil {
		errPump.abort()
		close(p.started)
		close(p.quit)
		return nil, fmt.Errorf("%w %s: %w", ErrStart, c.spec.Binary, err)
	}
	_ = errPump.w.Close() // the child has its copy; EOF comes when it (and its own children) exit
	p.pump = errPump
	go errPump.run(p.stderr)
	p.pid = cmd.Process.Pid
	close(p.started)
	c.mu.Lock()
	c.pid, c.addr, c.args = p.pid, addr, slices.Clone(cmd.Args)
	c.mu.Unlock()
	p.log.Info("llama-server started", "addr", addr, "args", cmd.Args)
	go func() { p.waitCh <- errPump.wait(cmd) }()
	return p, nil
}

// launch starts cmd as every child process is started: in its own process group (Windows: a
// kill-on-close job object), killed when the thread that forked it exits (Linux: the caller keeps
// its OS thread locked until cmd is reaped); log gets its pid.
func launch(cmd *exec.Cmd, log *slog.Logger) (*osProc, *slog.Logger, error) {
	cmd.WaitDelay = waitDelay
	configure(cmd)
	if err := cmd.Start(); err != nil {
		return nil, log, err
	}
	log = log.With("pid", cmd.Process.Pid)
	o, err := attach(cmd)
	if err != nil {
		log.Warn("child may outlive Llamatray if it is killed", "err", err, "argv", cmd.Args)
	}
	return o, log, nil
}

// exitEvent describes how process p ended.
func (c *Child) exitEvent(p *proc, out outcome, attempt int) Event {
	ev := Event{Kind: Exited, PID: p.pid, Addr: p.addr, ExitCode: -1, Deliberate: out.deliberate,
		LogTail: c.ring.tail(LogTailLines)}
	how := "no exit status"
	if st := p.cmd.ProcessState; st != nil {
		ev.ExitCode = exitCode(st)
		how = st.String()
	}
	if l := lastLine(ev.LogTail); l != "" {
		how += fmt.Sprintf(" (last output: %q)", l)
	}
	switch {
	case out.deliberate:
	case out.timedOut:
		ev.Err = fmt.Errorf("%w (%s without output)", ErrLoadTimeout, c.spec.LoadTimeout)
	case out.bindFailed:
		ev.Err = fmt.Errorf("%w: %s in use, %d addresses tried", ErrBind, p.addr, attempt+1)
	case !out.ready:
		ev.Err = fmt.Errorf("%w: %s", ErrLoadFailed, how)
	default:
		ev.Err = fmt.Errorf("%w: %s", ErrCrashed, how)
	}
	return ev
}

// lastLine returns the last non-blank line of lines.
func lastLine(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(lines[i]); s != "" {
			return s
		}
	}
	return ""
}
