package config

import (
	"path/filepath"
	"testing"
)

func TestAutoPullKey(t *testing.T) {
	if Default().AutoPull {
		t.Fatal("auto_pull defaults to on")
	}
	c, err := Parse("x.toml", []byte("auto_pull = true\n"))
	if err != nil || !c.AutoPull {
		t.Fatalf("auto_pull = true: %+v, %v", c.AutoPull, err)
	}
	path := filepath.Join(t.TempDir(), "c.toml")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil || !back.AutoPull {
		t.Fatalf("round trip: %v %v", back.AutoPull, err)
	}
}

func TestHubCacheDir(t *testing.T) {
	env := map[string]string{}
	get := func(k string) string { return env[k] }
	env["XDG_CACHE_HOME"] = "/c"
	if d := HubCacheDir(get); d != filepath.FromSlash("/c/huggingface/hub") {
		t.Errorf("XDG_CACHE_HOME: %s", d)
	}
	env["HF_HOME"] = "/h"
	if d, h := HubCacheDir(get), HubHome(get); d != filepath.FromSlash("/h/hub") || h != filepath.FromSlash("/h") {
		t.Errorf("HF_HOME: %s %s", d, h)
	}
	env["HF_HUB_CACHE"] = "/x"
	if d := HubCacheDir(get); d != filepath.FromSlash("/x") {
		t.Errorf("HF_HUB_CACHE: %s", d)
	}
}
