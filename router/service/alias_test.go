package service

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/config"
)

// An alias given at run time resolves at once, is saved in the configuration, and can be taken away.
func TestSetAlias(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "config.toml")
	svc := pinService(t, cfgPath)
	if err := svc.SetAlias("m", "my-copy", true); err != nil {
		t.Fatal(err)
	}
	if id, err := svc.Engine().Resolve("my-copy"); err != nil || id != "m" {
		t.Fatalf("the new alias resolves to %q, %v", id, err)
	}
	if c, err := config.Load(cfgPath); err != nil || !slices.Contains(c.Models["m"].Aliases, "my-copy") || c.Models["m"].CtxSize != 1024 {
		t.Fatalf("saved: %+v %v", c.Models["m"], err)
	}
	if err := svc.SetAlias("m", "my-copy", true); err != nil {
		t.Errorf("adding it again: %v", err)
	}
	if err := svc.SetAlias("m", "m", false); !errors.Is(err, ErrNotAlias) {
		t.Errorf("taking away the ID: %v", err)
	}
	if err := svc.SetAlias("m", "my-copy", false); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Engine().Resolve("my-copy"); err == nil {
		t.Error("a removed alias still resolves")
	}
	if c, _ := config.Load(cfgPath); slices.Contains(c.Models["m"].Aliases, "my-copy") {
		t.Error("the removed alias is still in the file")
	}
	if err := svc.SetAlias("nope", "x", true); err == nil {
		t.Error("an alias of an unknown model was taken")
	}
	if err := svc.SetAlias("m", "a\nb", true); err == nil {
		t.Error("a name with a newline was taken")
	}
	for _, bad := range []string{"m\u202eftg.exe", "x\x1b[2Jy", "zero\u200bwidth", "c1\u009bz"} {
		if err := svc.SetAlias("m", bad, true); err == nil || !strings.Contains(err.Error(), "U+") {
			t.Errorf("the alias %q: %v, want it refused naming its character", bad, err)
		}
	}
}
