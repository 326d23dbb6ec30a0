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
