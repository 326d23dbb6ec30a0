package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adrg/xdg"

	"fyne.io/fyne/v2/test"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// isolateXDG points every per-user folder into the test's temporary folder.
func isolateXDG(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	for k, v := range map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_DATA_HOME": filepath.Join(home, "data"),
		"XDG_STATE_HOME": filepath.Join(home, "state"), "XDG_CACHE_HOME": filepath.Join(home, "cache"),
		"XDG_RUNTIME_DIR": filepath.Join(home, "run"),
	} {
		t.Setenv(k, v)
	}
	xdg.Reload()
	t.Cleanup(xdg.Reload)
	return home
}

// startedService starts a real service with cfg, stopped when the test ends, and its backend.
func startedService(t *testing.T, cfg config.Config) (*service.Service, *serviceBackend) {
	t.Helper()
	svc, err := service.New(cfg, service.Options{Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop(context.Background()) })
	return svc, newServiceBackend(svc)
}

// startService runs a real service over the fake llama-server with one small model.
func startService(t *testing.T, listen string) (*service.Service, string) {
	t.Helper()
	home := isolateXDG(t)
	models := filepath.Join(home, "models")
	if err := os.MkdirAll(models, 0o755); err != nil {
		t.Fatal(err)
	}
	f := ggufwrite.Header(ggufwrite.HeaderOptions{Blocks: 2, Embedding: 64, FFN: 128, Heads: 4, ContextLength: 512})
	if err := ggufwrite.WriteFile(filepath.Join(models, "tiny-chat.gguf"), f); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Listen = listen
	cfg.ModelDirs = []string{models}
	cfg.ScanDefaultDirs = false
	cfg.LlamaServer = testbed.FakeLlamaServer(t)
	cfg.MemoryLimit = 4 * config.GiB
	cfg.MemoryReserve = 0
	cfgPath := filepath.Join(home, "config", "llamatray", "config.toml")
	if err := os.MkdirAll(filepath.Dir(cfgPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Save(cfgPath); err != nil {
		t.Fatal(err)
	}
	svc, err := service.New(cfg, service.Options{ConfigPath: cfgPath, Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	startErr := svc.Start(context.Background())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := svc.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	if startErr != nil && svc.ListenErr() == nil {
		t.Fatalf("start: %v", startErr)
	}
	return svc, cfgPath
}

func TestWindowDrivesRealService(t *testing.T) {
	port := testbed.FreePort(t)
	svc, cfgPath := startService(t, "127.0.0.1:"+strconv.Itoa(port))
	b := newServiceBackend(svc)

	s := b.Snapshot()
	if s.ListenErr != "" || s.Server.Path == "" || len(s.Models) != 1 {
		t.Fatalf("snapshot: listen error %q, llama-server %q, %d models", s.ListenErr, s.Server.Path, len(s.Models))
	}
	m := s.Models[0]
	if m.State != service.StateUnloaded || m.Entry().Architecture != "llama" || m.Entry().ContextLength != 512 {
		t.Errorf("model = %+v", m)
	}
	if menu := BuildMenu(s); menu[0].Label != "Serving on 127.0.0.1:"+strconv.Itoa(port) {
		t.Errorf("menu header = %q", menu[0].Label)
	}

	u, l := newWatchedUI(t, b)
	l.wait(func() { u.models = newModelsWindow(u); u.models.show() })
	rowShows := func(what string) bool {
		var ok bool
		l.wait(func() { ok = hasText(u.models.list, what) })
		return ok
	}
	tap := func(label string) { l.wait(func() { test.Tap(findButton(t, u.models.list, label)) }) }

	// Load from the window; engine events refresh the row.
	tap("Load")
	testbed.WaitFor(t, 10*time.Second, "the model to load", func() bool { return rowShows("Loaded (1)") && rowShows("[Unload]") })
	if got := b.Snapshot().Models[0]; got.State != service.StateLoaded || got.PID == 0 {
		t.Errorf("engine state after Load: %+v", got.ModelStatus)
	}

	// Pin: the engine pins at once and the config file keeps it.
	tap("Pin")
	testbed.WaitFor(t, 10*time.Second, "the pin", func() bool { return rowShows("loaded · pinned") })
	testbed.WaitFor(t, 10*time.Second, "the pin in the config file", func() bool {
		c, err := config.Load(cfgPath)
		return err == nil && c.Models[m.ID].Pinned
	})

	// The live log view shows the child's output.
	l.wait(func() { u.showLogs(m.ID) })
	testbed.WaitFor(t, 10*time.Second, "the child's log lines", func() bool {
		var text string
		l.wait(func() { text = u.logs[m.ID].text.Text() })
		return strings.Contains(text, "srv")
	})

	tap("Unload")
	testbed.WaitFor(t, 10*time.Second, "the model to unload", func() bool { return rowShows("Available (1)") && rowShows("[Load]") })

	// Settings: a new port is validated, saved and applied live.
	newPort := testbed.FreePort(t)
	var sw *settingsWindow
	l.wait(func() {
		u.showSettings()
		sw = u.settings
		sw.entries[keyListen].SetText(strconv.Itoa(newPort))
		test.Tap(sw.save)
	})
	testbed.WaitFor(t, 10*time.Second, "the settings save", func() bool {
		var text string
		l.wait(func() { text = sw.general.Text })
		return text == "Saved and applied."
	})
	if got := svc.ListenAddr(); got != "127.0.0.1:"+strconv.Itoa(newPort) {
		t.Errorf("listening on %s after the change, want port %d", got, newPort)
	}
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(newPort) + "/v1/models")
	if err != nil {
		t.Fatalf("new port does not answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), m.ID) {
		t.Errorf("GET /v1/models on the new port: %d %s", resp.StatusCode, body)
	}
	if c, err := config.Load(cfgPath); err != nil || c.Listen != "127.0.0.1:"+strconv.Itoa(newPort) || !c.Models[m.ID].Pinned {
		t.Errorf("saved config: listen %q pinned %v (%v)", c.Listen, c.Models[m.ID].Pinned, err)
	}
}

func TestPortInUseKeepsTheAppUp(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	svc, _ := startService(t, busy.Addr().String())
	b := newServiceBackend(svc)
	s := b.Snapshot()
	if want := busy.Addr().String() + " is already in use by another program"; s.ListenErr != want {
		t.Fatalf("listen error = %q, want %q", s.ListenErr, want)
	}
	if TrayIcon(s) != IconError || !strings.HasPrefix(BuildMenu(s)[0].Label, "Not serving: ") {
		t.Errorf("tray does not show the problem: %v %q", TrayIcon(s), BuildMenu(s)[0].Label)
	}
	if got := startupNotes(s); len(got) != 1 || got[0].Title != "Llamatray is not serving" {
		t.Errorf("startup notifications = %+v", got)
	}
	u, l := newTestUIWith(t, b)
	l.wait(func() {
		u.models = newModelsWindow(u)
		u.models.show()
		if !hasText(u.models.win.Content(), "Not serving") || !hasText(u.models.list, "tiny-chat") {
			t.Errorf("window: %q", texts(u.models.win.Content()))
		}
	})
}
