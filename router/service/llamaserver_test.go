package service

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/adrg/xdg"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/locate"
	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ghreleases"
)

// With llama_server_update on, the daily check installs the newer release and the service uses it;
// with it off, nothing is downloaded.
func TestDailyUpdate(t *testing.T) {
	tgz := ghreleases.FakeTarGz(t, "b7100")
	gh := ghreleases.New()
	t.Cleanup(gh.Close)
	gh.Add("b7000", map[string][]byte{ghreleases.AssetName("b7000", ".tar.gz"): tgz})
	home := t.TempDir()
	t.Cleanup(xdg.Reload)
	for k, v := range map[string]string{"HOME": home, "XDG_DATA_HOME": filepath.Join(home, "data"), "XDG_STATE_HOME": filepath.Join(home, "state"),
		"XDG_CONFIG_HOME": filepath.Join(home, "config"), "LLAMA_SERVER": "", "PATH": t.TempDir(), releases.URLEnv: gh.Base} {
		t.Setenv(k, v)
	}
	xdg.Reload()
	cfg := config.Default()
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg.ModelDirs = []string{t.TempDir()}
	cfg.ScanDefaultDirs = false
	svc, err := New(cfg, Options{Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := svc.InstallBuild(ctx, releases.Request{Build: "b7000"}, nil); err != nil {
		t.Fatal(err)
	}
	if ls := svc.LlamaServer(); ls.Source != locate.SourceInstalled || ls.Build != "b7000" {
		t.Fatalf("after the install: %+v", ls)
	}
	gh.Add("b7100", map[string][]byte{ghreleases.AssetName("b7100", ".tar.gz"): tgz})

	// Off (the default): the check does nothing.
	n := gh.Downloads()
	if svc.checkUpdate(ctx) || gh.Downloads() != n || svc.LlamaServer().Build != "b7000" {
		t.Fatalf("the check ran with the setting off: %d downloads, %+v", gh.Downloads()-n, svc.LlamaServer())
	}

	cfg.LlamaServerUpdate = true
	if err := svc.Edit(func(c *config.Config) error { *c = cfg.Clone(); return nil }); err != nil {
		t.Fatal(err)
	}
	go svc.updateDaily(ctx, 0, time.Hour)
	testbed.WaitFor(t, 30*time.Second, "the daily update", func() bool { return svc.LlamaServer().Build == "b7100" })
	if st, _ := svc.installer.Store.State(); st != (releases.State{Current: "b7100", Previous: "b7000"}) {
		t.Errorf("state = %+v", st)
	}
}
