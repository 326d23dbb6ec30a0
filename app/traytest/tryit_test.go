//go:build linux

package traytest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// activityTotal is a model's requests and tokens in GET /api/activity.
type activityTotal struct {
	Requests  int   `json:"requests"`
	TokensIn  int64 `json:"tokens_in"`
	TokensOut int64 `json:"tokens_out"`
}

func readActivity(base, model string) (activityTotal, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/activity", nil)
	if err != nil {
		return activityTotal{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return activityTotal{}, err
	}
	defer resp.Body.Close()
	var doc struct {
		Models []struct {
			Model string        `json:"model"`
			Total activityTotal `json:"total"`
		} `json:"models"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return activityTotal{}, fmt.Errorf("GET /api/activity: %w", err)
	}
	for _, m := range doc.Models {
		if m.Model == model {
			return m.Total, nil
		}
	}
	return activityTotal{}, nil
}

// xdo runs xdotool on display.
func xdo(t testing.TB, display string, args ...string) {
	t.Helper()
	cmd := exec.Command("xdotool", args...)
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("xdotool %q: %v: %s", args, err, out)
	}
}

// Try it from the tray, with the real keyboard of the X server: the tray menu's Try it… opens the
// window, the keys typed go wherever the focus is (the test never names a field), Return sends.
// A prompt without the cursor, or a Return that does not send, leaves the router without a request.
// The follow-up, typed after the answer, goes with the first turn: its prompt is longer than the
// first prompt and answer together.
func TestTryItKeyboard(t *testing.T) {
	requireTools(t, "Xvfb", "dbus-daemon", "xdotool")
	bin := buildLlamatray(t)
	display := startXvfb(t, 1280, 800)
	bus := startBus(t)
	w := startWatcher(t, bus)
	modelsDir := t.TempDir()
	const model = "tiny-chat"
	if err := writeTinyModel(filepath.Join(modelsDir, model+".gguf")); err != nil {
		t.Fatal(err)
	}
	args, addr := appArgs(t, modelsDir)
	env := desktopEnv(t, display, bus, "LLAMATRAY_AUTOSTART=1", "FAKE_LLAMA_TOKENS=12", "FAKE_LLAMA_TOKEN_DELAY=5ms")
	app := startLlamatray(t, bin, args, env)
	item := waitRegistered(t, w, app)
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
	// No window manager runs: the X input focus is given to the window, as a click on it would.
	xdo(t, display, "search", "--onlyvisible", "--name", "^Try it$", "windowfocus", "--sync")

	base := "http://" + addr
	keys := 0
	say := func(text string) {
		xdo(t, display, "type", "--delay", "15", text)
		xdo(t, display, "key", "Return")
		keys += len(text) + 1
	}
	answered := func(n int) activityTotal {
		var got activityTotal
		waitForDeadline(t, 2*time.Minute, fmt.Sprintf("answer %d in GET /api/activity", n), func() bool {
			a, err := readActivity(base, model)
			got = a
			return err == nil && a.Requests >= n && a.TokensOut >= int64(12*n)
		})
		if got.Requests != n {
			t.Fatalf("%d requests after %d prompts: %+v", got.Requests, n, got)
		}
		return got
	}
	say("Write a haiku about the sea.")
	first := answered(1)
	say("Now one about the hills.")
	both := answered(2)
	if second := both.TokensIn - first.TokensIn; second <= first.TokensIn+first.TokensOut {
		t.Errorf("the follow-up's prompt has %d tokens, the first %d and its answer %d: the first turn did not go with it",
			second, first.TokensIn, first.TokensOut)
	}
	t.Logf("Try it from the tray by keyboard: 1 click (the tray's Try it…), %d keys, two answers: %+v", keys, both)
}
