//go:build linux

package traytest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parkShowDeadline is how soon after the engine has a state change the parked window must show it:
// half of the app's longest park (10 s), which a lost wake-up would wait out.
const parkShowDeadline = 5 * time.Second

// parked reports whether the app's UI thread (its main thread, where Fyne's loop runs) is parked:
// blocked in poll(2) on two descriptors, the X connection and the wake-up eventfd (app/idle_linux.go).
func parked(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(data)) // "nr arg1 arg2 …" while blocked in a system call
	if len(f) < 3 {
		return false
	}
	nr, err1 := strconv.Atoi(f[0])
	nfds, err2 := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 64)
	isPoll := nr == syscall.SYS_PPOLL || (runtime.GOARCH == "amd64" && nr == 7) // 7: poll on amd64
	return err1 == nil && err2 == nil && isPoll && nfds == 2
}

// windowShot is the pixels of the mapped window titled exactly title.
func windowShot(t *testing.T, display, title string) []byte {
	t.Helper()
	find := exec.Command("xdotool", "search", "--onlyvisible", "--name", "^"+title+"$")
	find.Env = append(os.Environ(), "DISPLAY="+display)
	id, err := find.Output()
	if err != nil {
		t.Fatalf("xdotool search %q: %v", title, err)
	}
	shot := exec.Command("import", "-window", strings.Fields(string(id))[0], "rgb:-")
	shot.Env = find.Env
	out, err := shot.Output()
	if err != nil {
		t.Fatalf("import the window %q: %v", title, err)
	}
	return out
}

// With a window open, Fyne's loop parks, and what needs the window wakes it at once: a model's
// state changing in the engine reaches the models window (loaded, then unloaded again), and keys
// typed into Try it's prompt and Return send the prompt.
func TestParkedWindowWakes(t *testing.T) {
	requireTools(t, "Xvfb", "dbus-daemon", "xdotool", "import")
	bin := buildLlamatray(t)
	display := startXvfb(t, 1280, 800)
	bus := startBus(t)
	w := startWatcher(t, bus)
	modelsDir := t.TempDir()
	const model = "tiny-park"
	if err := writeTinyModel(filepath.Join(modelsDir, model+".gguf")); err != nil {
		t.Fatal(err)
	}
	args, addr := appArgs(t, modelsDir)
	base := "http://" + addr
	app := startLlamatray(t, bin, args, desktopEnv(t, display, bus, "FAKE_LLAMA_TOKENS=4")) // the window opens
	item := waitRegistered(t, w, app)
	pid := app.cmd.Process.Pid
	waitFor(t, app, "the models window", func() bool {
		visible, _ := visibleWindow(display, windowTitle)
		return visible
	})

	for _, step := range []struct{ path, want string }{{"/models/load", "loaded"}, {"/models/unload", "unloaded"}} {
		waitFor(t, app, "the loop to park with the models window open", func() bool { return parked(pid) })
		before := windowShot(t, display, windowTitle)
		post(t, base+step.path, `{"model":"`+model+`"}`)
		waitFor(t, app, model+" "+step.want+" in GET /models", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ms, err := listModels(ctx, base)
			for _, m := range ms {
				if m.ID == model {
					return err == nil && m.Status.Value == step.want
				}
			}
			return false
		})
		waitForDeadline(t, parkShowDeadline, "the models window to show "+model+" "+step.want, func() bool {
			return !bytes.Equal(windowShot(t, display, windowTitle), before)
		})
	}

	// Try it from the tray, the prompt has the focus; once the loop is parked again, the keys go in.
	menuPath, err := menuPathOf(w.conn, item)
	if err != nil {
		t.Fatal(err)
	}
	layout := waitLayout(t, w.conn, item.Bus, menuPath, "Try it… in the tray menu", func(l menuNode) bool {
		_, ok := l.child(func(m menuNode) bool { return m.Label == "Try it…" })
		return ok
	})
	tryIt, _ := layout.child(func(m menuNode) bool { return m.Label == "Try it…" })
	if err := click(w.conn, item.Bus, menuPath, tryIt.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, app, "the Try it window", func() bool {
		visible, _ := visibleWindow(display, "Try it")
		return visible
	})
	xdo(t, display, "search", "--onlyvisible", "--name", "^Try it$", "windowfocus", "--sync")
	waitFor(t, app, "the loop to park with Try it in front", func() bool { return parked(pid) })
	xdo(t, display, "type", "--delay", "15", "Hello there")
	xdo(t, display, "key", "Return")
	waitFor(t, app, "the prompt typed while parked to be sent", func() bool {
		a, err := readActivity(base, model)
		return err == nil && a.Requests == 1
	})
}

// post sends body to url as JSON and fails the test unless it answers 200.
func post(t *testing.T, url, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s", url, resp.Status)
	}
}
