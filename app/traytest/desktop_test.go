//go:build linux

package traytest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long Xvfb and dbus-daemon may take to say they are ready.
const startTimeout = 30 * time.Second

// requireTools skips the test when a tool is missing, or fails it when $CI is set: on CI a missing
// tool is a broken setup, not a reason to pass quietly.
func requireTools(t testing.TB, tools ...string) {
	t.Helper()
	var missing []string
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("%s not found: the tray test needs a headless X server and a D-Bus daemon "+
		"(Debian/Ubuntu: apt-get install xvfb dbus)", strings.Join(missing, " and "))
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI is set, so this fails instead of skipping")
	}
	t.Skip(msg)
}

// startDaemon starts cmd with a pipe as its file descriptor 3 and returns the first line the
// program writes there: Xvfb's -displayfd and dbus-daemon's --print-address both write it once
// the server accepts connections. The process is stopped when the test ends. Its output goes to
// logPath, whose content comes with any error.
func startDaemon(t testing.TB, cmd *exec.Cmd, logPath string) (string, error) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		return "", fmt.Errorf("create %s: %w", logPath, err)
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("pipe: %w", err)
	}
	defer r.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	err = cmd.Start()
	w.Close() // the child holds its copy: EOF on r means it exited
	if err != nil {
		return "", fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	r.SetReadDeadline(time.Now().Add(startTimeout))
	line, err := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSpace(line)
	if err != nil || line == "" {
		stop()
		out, _ := os.ReadFile(logPath)
		return "", fmt.Errorf("%s did not report ready (%v): %s", filepath.Base(cmd.Path), err, out)
	}
	t.Cleanup(stop)
	return line, nil
}

// displayTaken says whether an X server has, or had, display :n: its socket or lock file exists.
func displayTaken(n int) bool {
	for _, p := range []string{fmt.Sprintf("/tmp/.X11-unix/X%d", n), fmt.Sprintf("/tmp/.X%d-lock", n)} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}

// startXvfb starts Xvfb on the first free display from :90 with a screen of the given size and
// returns the DISPLAY value once the server accepts connections.
func startXvfb(t testing.TB, width, height int) string {
	t.Helper()
	dir := t.TempDir()
	for n := 90; n < 190; n++ {
		if displayTaken(n) {
			continue
		}
		cmd := exec.Command("Xvfb", ":"+strconv.Itoa(n), "-screen", "0", fmt.Sprintf("%dx%dx24", width, height),
			"-nolisten", "tcp", "-displayfd", "3")
		got, err := startDaemon(t, cmd, filepath.Join(dir, fmt.Sprintf("xvfb-%d.log", n)))
		if err != nil {
			// Another server may have taken :n in the meantime: try the next one.
			t.Logf("Xvfb on :%d: %v", n, err)
			continue
		}
		if got != strconv.Itoa(n) {
			t.Fatalf("Xvfb asked for :%d reported display %q", n, got)
		}
		// Belt and braces: the socket must accept a connection now.
		conn, err := net.DialTimeout("unix", fmt.Sprintf("/tmp/.X11-unix/X%d", n), 5*time.Second)
		if err != nil {
			t.Fatalf("Xvfb :%d reported ready but its socket refuses connections: %v", n, err)
		}
		conn.Close()
		return ":" + strconv.Itoa(n)
	}
	t.Fatal("no free X display in :90-:189 where Xvfb would start")
	return ""
}

// busConfig is a private session bus: its own socket, no service activation, everything allowed.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// startBus starts a private dbus-daemon and returns its address once it accepts connections.
func startBus(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, busConfig, filepath.Join(dir, "bus")), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--print-address=3")
	addr, err := startDaemon(t, cmd, filepath.Join(dir, "dbus.log"))
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
