package service

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/llamatray/llamatray/router/config"
)

// An edit runs on the configuration in force when it is made: a pin made after the caller read
// the configuration is kept, in the file and in the service.
func TestEditKeepsAPinMadeMeanwhile(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "config.toml")
	svc := pinService(t, cfgPath)
	read := svc.Config() // what a window read when it opened
	if err := svc.SetPinned("m", true); err != nil {
		t.Fatal(err)
	}
	err := svc.Edit(func(c *config.Config) error {
		c.MaxLoaded = read.MaxLoaded + 3
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Models["m"].Pinned || c.MaxLoaded != read.MaxLoaded+3 {
		t.Fatalf("saved max_loaded %d, m %+v; want the edit and the pin", c.MaxLoaded, c.Models["m"])
	}
	if now := svc.Config(); !now.Models["m"].Pinned || now.MaxLoaded != read.MaxLoaded+3 {
		t.Fatalf("in force: max_loaded %d, m %+v", now.MaxLoaded, now.Models["m"])
	}
}

// A variant or an alias an edit adds resolves, in the catalog and the engine, as soon as Edit
// returns; an edit that fails, or whose result does not validate, changes nothing.
func TestEditResolvesWhatItNamed(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "config.toml")
	svc := pinService(t, cfgPath)
	err := svc.Edit(func(c *config.Config) error {
		next, err := c.WithVariant("m", "short", config.Model{CtxSize: 256})
		if err != nil {
			return err
		}
		m := next.Models["m"]
		m.Aliases = append(m.Aliases, "other-name")
		next.Models["m"] = m
		*c = next
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := svc.Catalog().Lookup("m@short"); !ok {
		t.Error("the new variant is not in the catalog when Edit returns")
	}
	if _, err := svc.Engine().Model("m@short"); err != nil {
		t.Errorf("the new variant is not in the engine when Edit returns: %v", err)
	}
	if id, err := svc.Engine().Resolve("other-name"); err != nil || id != "m" {
		t.Errorf("the new alias resolves to %q, %v", id, err)
	}

	before := svc.Config()
	refused := errors.New("refused")
	if err := svc.Edit(func(c *config.Config) error { c.MaxLoaded = 7; return refused }); !errors.Is(err, refused) {
		t.Errorf("a failing change: %v", err)
	}
	if err := svc.Edit(func(c *config.Config) error { c.MaxLoaded = -1; return nil }); err == nil {
		t.Error("a configuration that does not validate was taken")
	}
	if now := svc.Config(); now.MaxLoaded != before.MaxLoaded {
		t.Errorf("max_loaded %d after edits that failed, want %d", now.MaxLoaded, before.MaxLoaded)
	}
	if c, err := config.Load(cfgPath); err != nil || c.MaxLoaded != before.MaxLoaded || c.Models["m"].Variants["short"].CtxSize != 256 {
		t.Errorf("saved %+v, %v", c, err)
	}
}
