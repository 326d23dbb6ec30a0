package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Direct is a llama-server started by the harness itself, not by Llamatray.
type Direct struct {
	URL  string // http://127.0.0.1:PORT
	PID  int
	cmd  *exec.Cmd
	done chan struct{} // closed once the process is reaped
	err  error         // Wait's result, set before done closes
	log  *os.File
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		return 0, fmt.Errorf("releasing port %d: %w", port, err)
	}
	return port, nil
}

// StartDirect starts `bin -m model <args> --host 127.0.0.1 --port P`, its output going to logPath,
// and waits until GET /health answers 200 (polled every 10 ms). It returns the server and the time
// from spawn to that first 200.
func StartDirect(ctx context.Context, bin, model string, args []string, logPath string) (*Direct, time.Duration, error) {
	port, err := FreePort()
	if err != nil {
		return nil, 0, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, 0, fmt.Errorf("llama-server log: %w", err)
	}
	argv := append([]string{"-m", model}, args...)
	argv = append(argv, "--host", "127.0.0.1", "--port", strconv.Itoa(port))
	cmd := exec.Command(bin, argv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	setProcAttr(cmd)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, 0, fmt.Errorf("starting %s: %w", bin, err)
	}
	d := &Direct{URL: fmt.Sprintf("http://127.0.0.1:%d", port), PID: cmd.Process.Pid, cmd: cmd, done: make(chan struct{}), log: logf}
	go func() {
		d.err = cmd.Wait()
		close(d.done)
	}()
	if err := d.waitHealthy(ctx, 2*time.Minute); err != nil {
		d.Stop()
		return nil, 0, fmt.Errorf("%w (log: %s)", err, logPath)
	}
	return d, time.Since(start), nil
}

// healthClient never reuses connections, so a poll never waits on a half-open one.
var healthClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}

func (d *Direct) waitHealthy(ctx context.Context, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := healthClient.Get(d.URL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-d.done:
			return fmt.Errorf("llama-server exited before it was ready: %v", d.err)
		case <-deadline.C:
			return fmt.Errorf("llama-server not ready after %s", timeout)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Stop ends the server: SIGTERM, then SIGKILL of its process group after 10 s. It waits until the
// process is reaped.
func (d *Direct) Stop() {
	defer d.log.Close()
	select {
	case <-d.done:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-d.done:
	case <-t.C:
		killGroup(d.cmd)
		<-d.done
	}
}

// CPU is the CPU time (user + system) the server has used so far; ok is false where /proc cannot
// tell (other systems).
func (d *Direct) CPU() (time.Duration, bool) { return procCPU(d.PID) }

// Exited reports whether the process ended, and how.
func (d *Direct) Exited() (bool, error) {
	select {
	case <-d.done:
		var ee *exec.ExitError
		if errors.As(d.err, &ee) && ee.ExitCode() == -1 {
			return true, nil // killed by our own signal
		}
		return true, d.err
	default:
		return false, nil
	}
}
