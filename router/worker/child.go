package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/internal/backoff"
)

const (
	rpcReadyTimeout = 30 * time.Second
	rpcPollEvery    = 50 * time.Millisecond
	backoffMin      = 500 * time.Millisecond
	backoffMax      = 30 * time.Second
	// steadyRun: a child that ran this long resets the restart backoff.
	steadyRun = time.Minute
	tailLines = 12
)

// rpcChild owns llama.cpp's rpc-server process: its run goroutine starts it bound to 127.0.0.1
// on a free port, publishes its address once it accepts connections, restarts it with backoff
// when it exits, and kills it when the context ends.
type rpcChild struct {
	path    string
	threads int
	log     *slog.Logger

	mu      sync.Mutex    // guards addr, lastErr and change
	addr    string        // host:port while the child accepts connections, else ""
	lastErr error         // why the child last stopped
	change  chan struct{} // closed (and replaced) whenever addr changes
}

func newRPCChild(path string, threads int, log *slog.Logger) *rpcChild {
	return &rpcChild{path: path, threads: threads, log: log, change: make(chan struct{})}
}

// argv is the child's command line: loopback only, always.
func (c *rpcChild) argv(port int) []string {
	a := []string{c.path, "-H", "127.0.0.1", "-p", strconv.Itoa(port)}
	if c.threads > 0 {
		a = append(a, "-t", strconv.Itoa(c.threads))
	}
	return a
}

func (c *rpcChild) set(addr string, err error) {
	c.mu.Lock()
	c.addr = addr
	if err != nil {
		c.lastErr = err
	}
	close(c.change)
	c.change = make(chan struct{})
	c.mu.Unlock()
}

// down says why the child is not accepting connections now, or nil when it is.
func (c *rpcChild) down() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.addr != "" {
		return nil
	}
	if c.lastErr != nil {
		return c.lastErr
	}
	return errors.New("it has not started yet")
}

// wait returns the child's address, waiting up to d for it to be up.
func (c *rpcChild) wait(ctx context.Context, d time.Duration) (string, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		c.mu.Lock()
		addr, ch, last := c.addr, c.change, c.lastErr
		c.mu.Unlock()
		if addr != "" {
			return addr, nil
		}
		select {
		case <-ch:
		case <-t.C:
			if last == nil {
				last = errors.New("it has not started yet")
			}
			return "", fmt.Errorf("%w: %w", ErrWorkerDown, last)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// run is the owner goroutine. first gets nil once the child first accepts connections, or the
// error of its first start; after that, failures are logged and the child restarted.
func (c *rpcChild) run(ctx context.Context, first chan<- error) {
	// Linux: Pdeathsig is tied to the thread that forked the child; keep this one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wait := backoffMin
	started := false
	for {
		t0 := time.Now()
		err := c.once(ctx, func(addr string) {
			c.set(addr, nil)
			if !started {
				started = true
				first <- nil
			}
		})
		c.set("", err)
		if ctx.Err() != nil {
			if !started {
				first <- ctx.Err()
			}
			return
		}
		if !started {
			first <- err
			return
		}
		if time.Since(t0) > steadyRun {
			wait = backoffMin
		}
		c.log.Error("rpc-server stopped; restarting", "err", err, "in", wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
		wait = backoff.Next(wait, backoffMin, backoffMax)
	}
}

// once runs the child until it exits or ctx ends; ready is called when it accepts connections.
func (c *rpcChild) once(ctx context.Context, ready func(addr string)) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	argv := c.argv(port)
	cmd := exec.Command(argv[0], argv[1:]...)
	configure(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.path, err)
	}
	log := c.log.With("pid", cmd.Process.Pid)
	log.Info("rpc-server started", "argv", strings.Join(argv, " "))
	tail := &tailBuf{}
	pumped := make(chan struct{})
	go func() { defer close(pumped); tail.pump(out, log) }()
	exited := make(chan error, 1)
	go func() {
		<-pumped // Wait closes the pipe: read it all first
		exited <- cmd.Wait()
	}()

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(rpcReadyTimeout)
	tick := time.NewTicker(rpcPollEvery)
	defer tick.Stop()
	up := false
	for !up {
		select {
		case err := <-exited:
			return fmt.Errorf("rpc-server exited before it accepted connections (%v): %s", err, tail.String())
		case <-ctx.Done():
			kill(cmd)
			<-exited
			return ctx.Err()
		case <-tick.C:
			if d, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				d.Close()
				up = true
			} else if time.Now().After(deadline) {
				kill(cmd)
				<-exited
				return fmt.Errorf("rpc-server did not accept connections on %s within %s: %s", addr, rpcReadyTimeout, tail.String())
			}
		}
	}
	log.Info("rpc-server ready", "addr", addr)
	ready(addr)
	select {
	case err := <-exited:
		return fmt.Errorf("rpc-server exited (%v): %s", err, tail.String())
	case <-ctx.Done():
		kill(cmd)
		<-exited
		log.Info("rpc-server stopped")
		return ctx.Err()
	}
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailBuf keeps the child's last output lines, for the error when it exits.
type tailBuf struct {
	mu    sync.Mutex // guards lines
	lines []string
}

func (t *tailBuf) pump(r io.Reader, log *slog.Logger) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64*1024)
	for sc.Scan() {
		line := sc.Text()
		log.Debug("rpc-server", "line", line)
		t.mu.Lock()
		t.lines = append(t.lines, line)
		if len(t.lines) > tailLines {
			t.lines = t.lines[1:]
		}
		t.mu.Unlock()
	}
	io.Copy(io.Discard, r)
}

func (t *tailBuf) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return "(no output)"
	}
	return strings.Join(t.lines, " | ")
}
