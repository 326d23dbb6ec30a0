package app

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
	"github.com/llamatray/llamatray/router/testbed/ghreleases"
)

// From a home without llama-server, the banner's Install llama-server button installs the stand-in's
// release (the fake llama-server) through the real service, shows its progress, and the banner goes;
// the model then loads with the installed build.
func TestInstallLlamaServerButton(t *testing.T) {
	tgz := ghreleases.FakeTarGz(t, "b7100")
	gh := ghreleases.New()
	t.Cleanup(gh.Close)
	cpu := ghreleases.AssetName("b7100", ".tar.gz")
	vulkan := strings.Replace(cpu, "-bin-ubuntu-", "-bin-ubuntu-vulkan-", 1) // another build the user may pick
	gh.Add("b7100", map[string][]byte{cpu: tgz, vulkan: tgz})
	home := isolateXDG(t)
	t.Setenv(releases.URLEnv, gh.Base)
	t.Setenv("PATH", t.TempDir())
	t.Setenv("LLAMA_SERVER", "")

	models := filepath.Join(home, "models")
	os.MkdirAll(models, 0o755)
	f := ggufwrite.Header(ggufwrite.HeaderOptions{Blocks: 2, Embedding: 64, FFN: 128, Heads: 4, ContextLength: 512})
	if err := ggufwrite.WriteFile(filepath.Join(models, "tiny-chat.gguf"), f); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:" + strconv.Itoa(testbed.FreePort(t))
	cfg.ModelDirs = []string{models}
	cfg.ScanDefaultDirs = false
	cfg.MemoryLimit = 4 * config.GiB
	cfg.MemoryReserve = 0
	svc, sb := startedService(t, cfg)
	if s := sb.Snapshot(); s.Server.Path != "" {
		t.Fatalf("llama-server found before the install: %s", s.Server.Path)
	}

	u, l := newWatchedUI(t, sb)
	l.wait(func() { u.models = newModelsWindow(u); u.models.show() })
	shows := func(what string) bool {
		var ok bool
		l.wait(func() { ok = hasText(u.models.win.Content(), what) })
		return ok
	}
	if !shows("llama-server not found") || !shows("[Install llama-server]") {
		t.Fatalf("banner: %q", texts(u.models.win.Content()))
	}
	// The panel says which build suits this machine and why, and offers the others.
	var picked string
	var options []string
	testbed.WaitFor(t, 10*time.Second, "the build choice", func() bool {
		l.wait(func() { picked, options = u.models.install.pick.Selected, u.models.install.pick.Options })
		return picked != ""
	})
	if !strings.Contains(picked, "for this machine") || (runtime.GOOS == "linux" && len(options) != 2) {
		t.Errorf("choice %q of %q", picked, options)
	}
	if !shows("llama.cpp b7100") || !shows("for this machine: ") {
		t.Errorf("no reason shown: %q", texts(u.models.win.Content()))
	}
	want := ""
	if runtime.GOOS == "linux" {
		// Pick the other one.
		l.wait(func() { u.models.install.pick.SetSelectedIndex(1); want = u.models.install.assets[1] })
	}
	shoot(t, l, u.models.win, "install-1-not-found")
	var bar float64
	var barShown bool
	l.wait(func() { test.Tap(findButton(t, u.models.banners, "Install llama-server")) })
	testbed.WaitFor(t, 30*time.Second, "the install to finish", func() bool {
		var done bool
		l.wait(func() {
			si := u.models.install
			bar, barShown = si.bar.Value, si.bar.Visible()
			done = !si.running && strings.HasPrefix(si.status.Text, "Installed llama.cpp b7100")
		})
		return done
	})
	if bar != 1 || !barShown {
		t.Errorf("progress bar at the end: %v shown %v", bar, barShown)
	}
	shoot(t, l, u.models.win, "install-2-installed")
	testbed.WaitFor(t, 10*time.Second, "the banner to go", func() bool { return !shows("llama-server not found") })
	if ls := svc.LlamaServer(); ls.Source != "installed" || ls.Build != "b7100" {
		t.Fatalf("service uses %+v", ls)
	}
	if builds, _ := svc.InstalledBuilds(); want != "" && (len(builds) != 1 || builds[0].Asset != want) {
		t.Errorf("installed %+v, want the picked %s", builds, want)
	}
	l.wait(func() { test.Tap(findButton(t, u.models.list, "Load")) })
	testbed.WaitFor(t, 10*time.Second, "the model to load on the installed build", func() bool { return shows("[Unload]") })
	if got := sb.Snapshot().Models[0].Binary; got != svc.LlamaServer().Path {
		t.Errorf("the child runs %s", got)
	}
	shoot(t, l, u.models.win, "install-3-loaded")
}

// A failed install says why on the banner and lets the user try again.
func TestInstallLlamaServerButtonFailure(t *testing.T) {
	gh := ghreleases.New()
	t.Cleanup(gh.Close)
	gh.Add("b7100", map[string][]byte{"llama-b7100-bin-plan9-x64.zip": []byte("nothing here runs")})
	_, sb, _ := noServerService(t, gh.Base)
	u, l := newTestUIWith(t, sb)
	l.wait(func() { u.models = newModelsWindow(u); u.models.show() })
	l.wait(func() { test.Tap(findButton(t, u.models.banners, "Install llama-server")) })
	testbed.WaitFor(t, 10*time.Second, "the failure", func() bool {
		var text string
		var enabled bool
		l.wait(func() { text, enabled = u.models.install.status.Text, !u.models.install.button.Disabled() })
		return enabled && strings.Contains(text, "Install failed") && strings.Contains(text, "no llama.cpp build for this system")
	})
}

// An install in progress shows Cancel; Cancel stops it and the builds stay as they were.
func TestInstallLlamaServerCancel(t *testing.T) {
	tgz := ghreleases.FakeTarGz(t, "b7100")
	gh := ghreleases.New()
	t.Cleanup(gh.Close)
	gh.Add("b7100", map[string][]byte{ghreleases.AssetName("b7100", ".tar.gz"): tgz})
	gh.StallAt.Store(1000)
	svc, sb, _ := noServerService(t, gh.Base)
	u, l := newTestUIWith(t, sb)
	l.wait(func() { u.models = newModelsWindow(u); u.models.show() })
	l.wait(func() { test.Tap(findButton(t, u.models.banners, "Install llama-server")) })
	testbed.WaitFor(t, 10*time.Second, "the download under way, with Cancel", func() bool {
		var ok bool
		l.wait(func() {
			si := u.models.install
			ok = si.stop.Visible() && strings.Contains(si.status.Text, "Downloading llama.cpp b7100")
		})
		return ok
	})
	l.wait(func() { test.Tap(u.models.install.stop) })
	testbed.WaitFor(t, 10*time.Second, "the install cancelled", func() bool {
		var text string
		l.wait(func() { text = u.models.install.status.Text })
		return strings.Contains(text, "Install cancelled")
	})
	if builds, _ := svc.InstalledBuilds(); len(builds) != 0 {
		t.Errorf("a cancelled install left builds: %+v", builds)
	}
}

// noServerService is a service (not started) in a fresh home with no llama-server anywhere, whose
// llama.cpp releases come from releasesURL, its backend, and the one folder on its PATH.
func noServerService(t *testing.T, releasesURL string) (*service.Service, *serviceBackend, string) {
	t.Helper()
	isolateXDG(t)
	t.Setenv(releases.URLEnv, releasesURL)
	path := t.TempDir()
	t.Setenv("PATH", path)
	t.Setenv("LLAMA_SERVER", "")
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:" + strconv.Itoa(testbed.FreePort(t))
	cfg.ModelDirs = []string{t.TempDir()}
	cfg.ScanDefaultDirs = false
	svc, err := service.New(cfg, service.Options{Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return svc, newServiceBackend(svc), path
}
