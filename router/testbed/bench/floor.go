package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"time"

	"github.com/llamatray/llamatray/router/testbed/bench/harness"
)

// floorArg makes this binary run as the bare proxy: `bench -bare-proxy LISTEN TARGET`.
const floorArg = "-bare-proxy"

// runBareProxy is the floor of any Go router: net/http's ReverseProxy with its defaults in front of
// target, nothing else (no routing by model, leases, auth or logs). It serves until killed.
func runBareProxy(listen, target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("bare proxy target: %w", err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }}
	return http.ListenAndServe(listen, proxy)
}

// floorProxy is the bare proxy started as its own process, like Llamatray.
type floorProxy struct {
	cmd *exec.Cmd
	url string
}

// startFloor starts the bare proxy in front of directURL with env added to its environment, and
// waits until it accepts connections.
func startFloor(ctx context.Context, directURL string, env []string) (*floorProxy, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bare proxy: %w", err)
	}
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(self, floorArg, addr, directURL)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bare proxy: %w", err)
	}
	f := &floorProxy{cmd: cmd, url: "http://" + addr}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return f, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			f.stop()
			return nil, fmt.Errorf("bare proxy not listening on %s: %w", addr, err)
		}
		time.Sleep(10 * time.Millisecond) // polling a port that has no event to wait on
	}
}

// cpu is the bare proxy's CPU time so far.
func (f *floorProxy) cpu() (time.Duration, bool) { return harness.ProcessCPUOf(f.cmd.Process.Pid) }

func (f *floorProxy) stop() {
	_ = f.cmd.Process.Kill()
	_ = f.cmd.Wait()
}
