package service

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/wire"
)

// A peer added by the API or the window: a bad name given is told before a bad URL; a good one is
// saved under its name, its URL without the trailing '/', and can be taken out again.
func TestAddPeer(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "config.toml")
	svc := pinService(t, cfgPath)
	if err := svc.AddPeer(wire.PeerAdd{Name: "-x", URL: "ftp://h"}); err == nil || !strings.Contains(err.Error(), "must start with a letter or digit") {
		t.Errorf("a bad name and a bad URL: %v, want the name's error", err)
	}
	if err := svc.AddPeer(wire.PeerAdd{URL: "ftp://h"}); err == nil || !strings.Contains(err.Error(), "scheme") {
		t.Errorf("a bad URL: %v", err)
	}
	if err := svc.AddPeer(wire.PeerAdd{URL: "http://desk.local:8080/"}); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(cfgPath)
	if p, ok := c.Peers["desk.local-8080"]; err != nil || !ok || p.URL != "http://desk.local:8080" {
		t.Fatalf("saved peers %+v, %v", c.Peers, err)
	}
	if err := svc.RemovePeer("desk.local-8080"); err != nil {
		t.Fatal(err)
	}
	if c, _ := config.Load(cfgPath); len(c.Peers) != 0 {
		t.Errorf("peers after the removal: %+v", c.Peers)
	}
}
