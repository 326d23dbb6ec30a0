package config

import (
	"fmt"
	"sync"
	"testing"
)

// Writers of one file in different places (the service, the CLI: each its own Writer) take turns
// through the file's lock: no change is lost to a save of an older copy.
func TestWritersOfOneFileTakeTurns(t *testing.T) {
	path := t.TempDir() + "/config.toml"
	load := func() (Config, error) { return Load(path) }
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			w := &Writer{Path: path}
			errs <- w.Edit(load, func(c *Config) error {
				if c.Peers == nil {
					c.Peers = map[string]Peer{}
				}
				c.Peers[fmt.Sprintf("p%d", i)] = Peer{URL: fmt.Sprintf("http://192.0.2.%d:8080", i+1)}
				return nil
			}, func(_, cfg Config) error { return w.Save(cfg) })
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := Load(path)
	if err != nil || len(cfg.Peers) != 8 {
		t.Fatalf("%d peers saved, want 8: %v %v", len(cfg.Peers), cfg.Peers, err)
	}
}

// A change that finds nothing to do commits nothing; a refused one says why and commits nothing.
func TestWriterUnchangedAndRefused(t *testing.T) {
	w := &Writer{}
	commits := 0
	commit := func(_, _ Config) error { commits++; return nil }
	from := func() (Config, error) { return Default(), nil }
	if err := w.Edit(from, func(*Config) error { return ErrUnchanged }, commit); err != nil || commits != 0 {
		t.Fatalf("unchanged: %v, %d commits", err, commits)
	}
	if err := w.Edit(from, func(c *Config) error { c.LogLevel = "loud"; return nil }, commit); err == nil || commits != 0 {
		t.Fatalf("invalid: %v, %d commits", err, commits)
	}
}
