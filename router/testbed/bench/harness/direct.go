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
	argv := append([]string{bin, "-m", model}, args...)
	argv = append(argv, "--host", "127.0.0.1", "--port", strconv.Itoa(port))
	return StartServer(ctx, argv, nil, fmt.Sprintf("http://127.0.0.1:%d", port), logPath)
}

// StartServer starts argv, a server that will answer at base (http://HOST:PORT), with env added to
// its environment and its output going to logPath, and waits until GET base/health answers 200. It
// returns the server and the time from spawn to that first 200. The benchmark starts llama-server,
// llama.cpp's router and llama-swap with it.
func StartServer(ctx context.Context, argv, env []string, base, logPath string) (*Direct, time.Duration, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, 0, fmt.Errorf("%s log: %w", argv[0], err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	start := time.Now()
	srv, err := startServer(cmd, logf)
	if err != nil {
		logf.Close()
		return nil, 0, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	d := &Direct{server: srv, URL: base, PID: cmd.Process.Pid}
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
			return fmt.Errorf("%s exited before it was ready: %v", d.cmd.Path, d.err)
		case <-deadline.C:
			return fmt.Errorf("%s not ready after %s", d.cmd.Path, timeout)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Stop ends the server: SIGTERM, then SIGKILL of its process group after 10 s. It waits until the
// process is reaped.
func (d *Direct) Stop() { d.stop(syscall.SIGTERM, 10*time.Second) }
