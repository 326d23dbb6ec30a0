package harness

import (
	"context"
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
	*server
	URL string // http://127.0.0.1:PORT
	PID int
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
	start := time.Now()
	srv, err := startServer(cmd, logf)
	if err != nil {
		logf.Close()
		return nil, 0, fmt.Errorf("starting %s: %w", bin, err)
	}
	d := &Direct{server: srv, URL: fmt.Sprintf("http://127.0.0.1:%d", port), PID: cmd.Process.Pid}
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
func (d *Direct) Stop() { d.stop(syscall.SIGTERM, 10*time.Second) }
