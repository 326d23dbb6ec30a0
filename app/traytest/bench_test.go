//go:build linux

package traytest

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkIdleWindowOpen reports the idle app's CPU and resident memory with its window open and
// one model loaded, the window in front and not, as TestTrayMenu reaches that state: a figure to compare between changes
// (measured 102-105 MB peak without the GL driver on Debian under Xvfb), not a limit a test fails on.
//
//	go test -run '^$' -bench IdleWindowOpen ./app/traytest/
func BenchmarkIdleWindowOpen(b *testing.B) {
	requireTools(b, "Xvfb", "dbus-daemon", "xdotool")
	bin := buildLlamatray(b)
	display := startXvfb(b, 1280, 800)
	bus := startBus(b)
	w := startWatcher(b, bus)
	modelsDir := b.TempDir()
	const load = "tiny-beta"
	for _, id := range []string{"tiny-alpha", load} {
		if err := writeTinyModel(filepath.Join(modelsDir, id+".gguf")); err != nil {
			b.Fatal(err)
		}
	}
	args, addr := appArgs(b, modelsDir)
	app := startLlamatray(b, bin, args, desktopEnv(b, display, bus)) // not at login: the window opens
	waitRegistered(b, w, app)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/models/load",
		strings.NewReader(`{"model":"`+load+`"}`))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("POST /models/load %s: %s", load, resp.Status)
	}
	if _, ok := visibleWindow(display, windowTitle); ok {
		waitFor(b, app, "the models window to be mapped", func() bool {
			visible, _ := visibleWindow(display, windowTitle)
			return visible
		})
	}
	period := idlePeriod
	if testing.Short() {
		period = 5 * time.Second
	}
	// In front first (GLFW gives the keyboard focus to a window it shows), then not: the focus goes
	// to the root window, as a click elsewhere would take it.
	// The window's first frames (GL shaders compiled by the software renderer, fonts) are not
	// idle: a first reading, not reported, lets them pass.
	if _, err := measure(app.cmd.Process.Pid, period/6); err != nil {
		b.Fatal(err)
	}
	var focused, u usage
	for b.Loop() {
		if focused, err = measure(app.cmd.Process.Pid, period); err != nil {
			b.Fatal(err)
		}
		xdo(b, display, "search", "--maxdepth", "0", "--name", "", "windowfocus")
		if u, err = measure(app.cmd.Process.Pid, period); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("idle, window open and focused, one model loaded: %s", focused)
	b.Logf("idle, window open, not focused, one model loaded: %s", u)
	b.ReportMetric(mb(u.appPeak), "MB-peak-without-GL")
	b.ReportMetric(mb(u.rssPeak), "MB-peak")
	b.ReportMetric(u.cpuPercent, "%CPU")
	b.ReportMetric(focused.cpuPercent, "%CPU-focused")
}
