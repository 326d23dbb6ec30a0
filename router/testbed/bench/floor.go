package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
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
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("bare proxy: %w", err)
	}
	fmt.Println(floorReady) // tells startFloor it accepts connections
	return http.Serve(ln, proxy)
}

// floorReady is the line the bare proxy prints once it listens.
const floorReady = "listening"

// floorProxy is the bare proxy started as its own process, like Llamatray.
type floorProxy struct {
	cmd *exec.Cmd
	url string
}

// startFloor starts the bare proxy (or, with relay, the hand-written relay of relay.go) in front of
// directURL with env added to its environment, and waits until it accepts connections.
func startFloor(ctx context.Context, directURL string, relay bool, env []string) (*floorProxy, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bare proxy: %w", err)
	}
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{floorArg, addr, directURL}
	if relay {
		args = append(args, relayKind)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("bare proxy: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bare proxy: %w", err)
	}
	f := &floorProxy{cmd: cmd, url: "http://" + addr}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n') // "" when it exits first
		line <- strings.TrimSpace(s)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case l := <-line:
		if l != floorReady {
			f.stop()
			return nil, fmt.Errorf("bare proxy did not start on %s", addr)
		}
		return f, nil
	case <-ctx.Done():
		f.stop()
		return nil, ctx.Err()
	}
}

// cpu is the bare proxy's CPU time so far.
func (f *floorProxy) cpu() (time.Duration, bool) { return harness.ProcessCPUOf(f.cmd.Process.Pid) }

func (f *floorProxy) stop() {
	_ = f.cmd.Process.Kill()
	_ = f.cmd.Wait()
}
