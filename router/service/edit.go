package service

// One writer for the configuration (config.Writer): a window's save, a pin and an alias each change
// the configuration in force at the time, under the writer's lock, and the file is written from
// there, so that no change made meanwhile is dropped by a save of an older copy.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/llamatray/llamatray/router/config"
)

// Edit changes the configuration in force and its file, through the configuration's one writer
// (config.Writer.Edit): change runs on a copy of the configuration in force, and the result is
// validated, saved to the configuration file (when the service has one) and applied live. When
// change fails, or the result does not validate or cannot be saved, nothing changes and the error
// says why. A change of the model folders, of scan_default_dirs or of any model's variants or
// aliases is rescanned before Edit returns, so that a name the change made resolves (and a name it
// took away no longer does) once it has; other changes are rescanned in the background, for the
// estimates.
//
// A change is a function rather than a whole configuration so that what others changed since the
// caller last read the configuration (a pin through the API, an alias, another window) survives.
func (s *Service) Edit(change func(*config.Config) error) error {
	return s.file.Edit(s.inForce, s.thenPresets(change), func(old, cfg config.Config) error {
		if err := s.file.Save(cfg); err != nil {
			return fmt.Errorf("not saved, nor applied: %w", err)
		}
		return s.apply(old, cfg)
	})
}

// keep changes the configuration in force and its file for a pin or an alias, which the engine and
// the catalog take in by themselves: the change holds for this run even when the file cannot be
// written (notSaved says why). refused is the error of a change refused, which changed nothing.
func (s *Service) keep(change func(*config.Config) error) (refused, notSaved error) {
	refused = s.file.Edit(s.inForce, s.thenPresets(change), func(_, cfg config.Config) error {
		s.mu.Lock()
		s.cfg = cfg
		s.mu.Unlock()
		notSaved = s.file.Save(cfg)
		return nil
	})
	return refused, notSaved
}

// thenPresets is change followed by the preset file read again when the change names another one
// (presetsFor), for the writer's Edit: the configuration in force is still the old one under its lock.
func (s *Service) thenPresets(change func(*config.Config) error) func(*config.Config) error {
	return func(cfg *config.Config) error {
		old := s.config()
		if err := change(cfg); err != nil {
			return err
		}
		withPresets, err := s.presetsFor(old, *cfg)
		if err != nil {
			return err
		}
		*cfg = withPresets
		return nil
	}
}

// inForce is the configuration in force, for the writer.
func (s *Service) inForce() (config.Config, error) { return s.config(), nil }

// renamed moves, in the configuration in force, the settings of models the catalog renamed (a
// model pulled as ORG/REPO:QUANT, named by its file before) from their old IDs to the new ones
// (config.Config.Renamed). The file keeps the old names until the next Edit writes it. Each scan
// calls it before it reads any model's settings.
func (s *Service) renamed(r map[string]string) {
	var moved []string
	s.mu.Lock()
	if cfg, changed := s.cfg.Renamed(r); changed {
		for n, o := range r {
			if _, had := s.cfg.Models[o]; had {
				moved = append(moved, n)
			}
		}
		s.cfg = cfg
	}
	s.mu.Unlock()
	for _, n := range moved {
		s.log.Info("settings of a renamed model now under its new ID", "model", n, "was", r[n])
	}
}

// apply puts cfg, validated, in force in place of old: catalog folders rescanned, engine limits
// updated, the listener restarted only when the listen address changed. The caller holds the writer's lock.
func (s *Service) apply(old, cfg config.Config) error {
	defer s.disc.Poke() // discover and advertise, and the listener (moved below), read again
	ls := s.LlamaServer()
	if cfg.LlamaServer != old.LlamaServer || ls.Path == "" {
		ls = s.findLlamaServer(cfg.LlamaServer)
	}
	s.mu.Lock()
	s.cfg = cfg
	s.llama = ls
	s.mu.Unlock()
	s.eng.SetLimits(limits(cfg, ls))
	s.workers.Sync(cfg.Workers)
	s.handler.Store(s.newRouter(cfg))
	switch {
	case !slices.Equal(cfg.ModelDirsResolved(), old.ModelDirsResolved()) || cfg.ScanDefaultDirs != old.ScanDefaultDirs:
		s.cat.SetDirs(cfg.ModelDirsResolved()) // scans before it returns
		s.eng.SyncCatalog()
	case namesChanged(old, cfg):
		if err := s.rescan(context.Background()); err != nil {
			s.log.Warn("rescan failed", "err", err)
			s.eng.SyncCatalog()
		}
	default:
		s.eng.SyncCatalog() // the per-model settings count from the next load on, not from the next scan
		go func() {
			if err := s.cat.Scan(context.Background()); err != nil {
				s.log.Warn("rescan failed", "err", err)
			}
		}()
	}
	s.syncOllamaPort()
	s.syncPeers()
	s.lend.Sync(cfg, false)
	if cfg.Listen != old.Listen || s.ListenErr() != nil {
		s.mu.Lock()
		srv := s.srv
		s.srv = nil
		s.mu.Unlock()
		if srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			srv.Shutdown(ctx)
			cancel()
		}
		return s.listen(cfg.Listen)
	}
	return nil
}

// namesChanged says whether a and b give the models different names: any model's variants, or any
// model's or variant's aliases, differ.
func namesChanged(a, b config.Config) bool {
	return !maps.EqualFunc(variantsOf(a), variantsOf(b), slices.Equal) ||
		!maps.EqualFunc(aliasesOf(a), aliasesOf(b), slices.Equal)
}

// aliasesOf is the aliases of every section, by model or variant ID; sections without are left out.
func aliasesOf(cfg config.Config) map[string][]string {
	out := map[string][]string{}
	for id, m := range cfg.Models {
		if len(m.Aliases) > 0 {
			out[id] = m.Aliases
		}
		for name, v := range m.Variants {
			if len(v.Aliases) > 0 {
				out[config.VariantID(id, name)] = v.Aliases
			}
		}
	}
	return out
}
