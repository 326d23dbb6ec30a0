package service

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
)

// Discovery follows the configuration in force: on by default, off after discover = false; its
// settings carry the bound listener and the configured peers' URLs; Stop ends its goroutine.
func TestDiscoverySettings(t *testing.T) {
	isolateHome(t)
	path := filepath.Join(t.TempDir(), "config.toml")
	cfg := config.Default()
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg.ScanDefaultDirs = false
	cfg.UpdateCheck = false
	cfg.Peers = map[string]config.Peer{"desk": {URL: "http://10.0.0.2:8080"}}
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	svc := startedService(t, cfg, path)
	if l := svc.DiscoveredList(); !l.Enabled || l.Discovered == nil {
		t.Errorf("default: %+v, want enabled and a list", l)
	}
	set := svc.disc.Settings()
	if !set.Browse || !set.Advertise || set.Listen != cfg.Listen || !slices.Equal(set.PeerURLs, []string{"http://10.0.0.2:8080"}) {
		t.Errorf("settings: %+v", set)
	}
	if err := svc.Edit(func(c *config.Config) error { c.Discover, c.Advertise = false, false; return nil }); err != nil {
		t.Fatal(err)
	}
	if l := svc.DiscoveredList(); l.Enabled || len(l.Discovered) != 0 {
		t.Errorf("discover = false: %+v", l)
	}
	if set := svc.disc.Settings(); set.Browse || set.Advertise {
		t.Errorf("settings after the edit: %+v", set)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := svc.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-svc.discDone:
	default:
		t.Error("the discovery goroutine still runs after Stop")
	}
}
