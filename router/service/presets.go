package service

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/llamatray/llamatray/router/config"
)

// presetCheckEvery is how often the preset file (config's presets) is looked at for a change.
const presetCheckEvery = 2 * time.Second

// withPresets is cfg with the preset file it names read (none: cfg without presets), its keys
// checked against the flags of the llama-server in use when there is one.
func (s *Service) withPresets(ctx context.Context, cfg config.Config) (config.Config, error) {
	if cfg.Presets == "" {
		return cfg.WithPresets(nil), nil
	}
	var known func(string) bool
	if s.LlamaServer().Path != "" {
		if flags, err := s.LlamaServerFlags(ctx); err == nil {
			known = func(f string) bool { return slices.Contains(flags, f) }
		}
	}
	p, err := config.ReadPresets(cfg.Presets, known)
	if err != nil {
		return cfg, err
	}
	for _, k := range p.Ignored {
		s.log.Info("preset key left to Llamatray's own setting (stop_timeout)", "key", k)
	}
	return cfg.WithPresets(p), nil
}

// presetsFor reads the preset file of cfg when it names another file than old, or old's was not
// read: for Edit, whose cfg was made from old.
func (s *Service) presetsFor(old, cfg config.Config) (config.Config, error) {
	if cfg.Presets == old.Presets && cfg.LoadedPresets() != nil {
		return cfg, nil
	}
	return s.withPresets(context.Background(), cfg)
}

// reloadPresets reads the preset file again, when it changed or when forced (GET /models?reload=1),
// and applies it through the configuration's writer (the file itself is not written): the models it
// adds, settings, aliases and tags. A file that does not read leaves the presets in force as they
// were, and the error says why.
func (s *Service) reloadPresets(ctx context.Context, force bool) error {
	if old := s.config(); old.Presets == "" || !force && !old.PresetChanged() {
		return nil
	}
	err := s.file.Edit(s.inForce, func(cfg *config.Config) error {
		if cfg.Presets == "" {
			return config.ErrUnchanged
		}
		withPresets, err := s.withPresets(ctx, *cfg)
		if err != nil {
			if msg := err.Error(); msg != s.presetErr {
				s.presetErr = msg
				s.log.Warn("preset file not read; the presets in force stay", "err", err)
			}
			return fmt.Errorf("presets: %w", err)
		}
		s.presetErr = ""
		*cfg = withPresets
		return nil
	}, s.apply)
	if err != nil {
		return err
	}
	return s.rescan(ctx)
}

// reload is GET /models?reload=1: the preset file, then the model folders, read again.
func (s *Service) reload(ctx context.Context) error {
	if s.config().Presets != "" {
		return s.reloadPresets(ctx, true) // rescans
	}
	return s.rescan(ctx)
}

// watchPresets reads the preset file again each time it changes, until ctx ends.
func (s *Service) watchPresets(ctx context.Context) {
	repeat(ctx, presetCheckEvery, presetCheckEvery, func(ctx context.Context) {
		_ = s.reloadPresets(ctx, false) // reloadPresets logs a failure once
	})
}
