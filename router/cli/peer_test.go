package cli

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/atomicfile"
	"github.com/llamatray/llamatray/router/config"
)

// TestPeerCommandsOffline: with no instance running, peer add, list and rm change the file.
func TestPeerCommandsOffline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing answers there
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("listen = \""+addr+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runIt := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(append(args, "--config", path), Build{}, nil, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
		return out.String(), errb.String(), code
	}
	if out, e, code := runIt("peer", "add", "http://box.lan:8080/", "--api-key", "k1"); code != 0 || !strings.Contains(out, "peer box.lan-8080 added") {
		t.Fatalf("%d %s %s", code, out, e)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Peers["box.lan-8080"]; p.URL != "http://box.lan:8080" || p.APIKey != "k1" {
		t.Fatalf("%+v", cfg.Peers)
	}
	if out, _, code := runIt("peer", "list"); code != 0 || !strings.Contains(out, "box.lan-8080") || !strings.Contains(out, "not running") {
		t.Fatalf("%d %s", code, out)
	}
	if _, e, code := runIt("peer", "add", "ftp://x", "--name", "x"); code != 2 || !strings.Contains(e, "http or https") {
		t.Fatalf("%d %s", code, e)
	}
	if _, e, code := runIt("peer", "add", "http://x", "--name", "../x"); code != 2 || !strings.Contains(e, "peer name") {
		t.Fatalf("%d %s", code, e)
	}
	if out, e, code := runIt("peer", "rm", "box.lan-8080"); code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("%d %s %s", code, out, e)
	}
	if _, e, code := runIt("peer", "rm", "box.lan-8080"); code != 1 || !strings.Contains(e, "no peer") {
		t.Fatalf("%d %s", code, e)
	}
	cfg, _ = config.Load(path)
	if len(cfg.Peers) != 0 {
		t.Fatalf("%+v", cfg.Peers)
	}
}

// The offline edit takes the lock a running service takes on the configuration file: another
// process trying it meanwhile finds it held.
func TestOfflineEditTakesTheConfigLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	var tried error
	_, err := editConfigFile(&clientFlags{configPath: path}, func(c *config.Config) error {
		f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		tried = atomicfile.TryLock(f)
		c.Peers = map[string]config.Peer{"box": {URL: "http://192.0.2.7:8080"}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(tried, atomicfile.ErrBusy) {
		t.Fatalf("the lock of %s.lock was free during the edit (TryLock: %v)", path, tried)
	}
	if cfg, err := config.Load(path); err != nil || cfg.Peers["box"].URL != "http://192.0.2.7:8080" {
		t.Fatalf("saved %+v, %v", cfg.Peers, err)
	}
}
