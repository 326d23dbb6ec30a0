//go:build linux

package traytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// buildLlamatray builds the module's main package into a temporary directory.
func buildLlamatray(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatalf("no go.mod in %s or any parent", wd)
		}
		root = parent
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "llamatray")
	cmd := exec.Command(goBin, "build", "-o", bin, ".")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build (in %s): %v\n%s", root, err, out)
	}
	return bin
}

// desktopEnv is the environment of a llamatray under test: this process's, minus anything that
// would reach the real desktop or the user's files, plus the test's display, bus and XDG dirs
// (config, data, cache, state and runtime, the last holding the single-instance socket).
func desktopEnv(t testing.TB, display, bus string, extra ...string) []string {
	t.Helper()
	root := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "DISPLAY", k == "WAYLAND_DISPLAY", k == "DBUS_SESSION_BUS_ADDRESS", k == "HOME",
			strings.HasPrefix(k, "XDG_"), strings.HasPrefix(k, "LLAMATRAY_"), strings.HasPrefix(k, "FAKE_LLAMA_"):
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "DISPLAY="+display, "DBUS_SESSION_BUS_ADDRESS="+bus)
	for _, d := range []struct{ key, dir string }{
		{"HOME", "home"}, {"XDG_CONFIG_HOME", "config"}, {"XDG_DATA_HOME", "data"},
		{"XDG_CACHE_HOME", "cache"}, {"XDG_STATE_HOME", "state"}, {"XDG_RUNTIME_DIR", "run"},
	} {
		p := filepath.Join(root, d.dir)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		env = append(env, d.key+"="+p)
	}
	return append(env, extra...)
}

// process is a running llamatray.
type process struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{} // closed once the process has exited and been reaped
	err     error         // Wait's result, set before exited is closed
}

// startLlamatray starts bin with args and env, its output going to a log file that is shown when
// the test fails. A process still running when the test ends is killed.
func startLlamatray(t testing.TB, bin string, args, env []string) *process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "llamatray.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start llamatray: %v", err)
	}
	p := &process{cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("llamatray output:\n%s", out)
		}
	})
	return p
}

// wait waits up to timeout for the process to exit and returns its exit code.
func (p *process) wait(timeout time.Duration) (int, error) {
	select {
	case <-p.exited:
	case <-time.After(timeout):
		return -1, fmt.Errorf("pid %d still running after %s", p.cmd.Process.Pid, timeout)
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0, nil
	case errors.As(p.err, &ee):
		return ee.ExitCode(), nil // -1 when killed by a signal
	default:
		return -1, p.err
	}
}

// routerModel is the part of a GET /models entry the test reads.
type routerModel struct {
	ID     string `json:"id"`
	Status struct {
		Value string `json:"value"`
		PID   int    `json:"pid"`
	} `json:"status"`
}

// listModels asks the running instance for its models.
func listModels(ctx context.Context, base string) ([]routerModel, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/models", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET /models: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /models: %s", resp.Status)
	}
	var doc struct {
		Data []routerModel `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("GET /models: %w", err)
	}
	return doc.Data, nil
}

// visibleWindow reports whether a window titled exactly title is mapped on display. The check
// needs xdotool; ok is false when it is not installed.
func visibleWindow(display, title string) (visible, ok bool) {
	xdotool, err := exec.LookPath("xdotool")
	if err != nil {
		return false, false
	}
	cmd := exec.Command(xdotool, "search", "--onlyvisible", "--name", "^"+title+"$")
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	out, err := cmd.Output()
	return err == nil && len(strings.TrimSpace(string(out))) > 0, true
}

// unmapWindow unmaps the mapped window titled exactly title on display, as a window manager hiding
// it would; the app is not told. It needs xdotool.
func unmapWindow(display, title string) error {
	cmd := exec.Command("xdotool", "search", "--onlyvisible", "--name", "^"+title+"$", "windowunmap")
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("xdotool windowunmap %q: %w: %s", title, err, out)
	}
	return nil
}

// writeTinyModel writes a tiny GGUF file, enough for the catalog and the fake llama-server.
func writeTinyModel(path string) error {
	return ggufwrite.WriteFile(path, ggufwrite.Header(ggufwrite.HeaderOptions{Blocks: 2, Embedding: 64}))
}

// appArgs are the arguments of a llamatray under test: a free port, modelsDir, the fake
// llama-server, a config file of its own, then extra. It also returns the address.
func appArgs(t testing.TB, modelsDir string, extra ...string) ([]string, string) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	args := []string{"--addr", addr, "--models-dir", modelsDir, "--llama-server", testbed.FakeLlamaServer(t),
		"--config", filepath.Join(t.TempDir(), "config.toml")}
	return append(args, extra...), addr
}

// waitRegistered waits for the app to register its tray icon with w.
func waitRegistered(t testing.TB, w *watcher, app *process) trayItem {
	t.Helper()
	select {
	case item := <-w.registered:
		return item
	case <-app.exited:
		t.Fatalf("llamatray exited before registering its tray icon: %v", app.err)
	case <-time.After(waitTimeout):
		t.Fatalf("llamatray did not register a tray icon with the StatusNotifierWatcher within %s", waitTimeout)
	}
	return trayItem{}
}
