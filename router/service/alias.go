package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNotAlias is matched when an alias to take away is not one of the model's configured aliases.
var ErrNotAlias = errors.New("not an alias of the model")

// SetAlias gives model name one more name (add) or takes one away, at once and for good: the
// change is saved as the model's `aliases` in the configuration, and the catalog is rescanned before
// it returns, so the new name resolves (or no longer does) when the caller answers. Ollama's
// /api/copy, and /api/delete of a copy, go through here. A name another model already has is
// refused, as the configuration's validation refuses it.
func (s *Service) SetAlias(name, alias string, add bool) error {
	alias = strings.TrimSpace(alias)
	if alias == "" || strings.ContainsAny(alias, "\x00\n\r\\") {
		return fmt.Errorf("%q cannot be a model's name", alias)
	}
	id, err := s.eng.Resolve(name)
	if err != nil {
		return err
	}
	if err := s.saveAlias(id, alias, add); err != nil {
		return err
	}
	if err := s.cat.Scan(context.Background()); err != nil {
		return fmt.Errorf("the alias is saved, but rescanning the models failed: %w", err)
	}
	s.eng.SyncCatalog()
	return nil
}

// saveAlias records the alias change in the configuration in force and in its file.
func (s *Service) saveAlias(id, alias string, add bool) error {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.Lock()
	m, _ := s.cfg.Section(id)
	has := slices.Contains(m.Aliases, alias)
	switch {
	case add && has:
		s.mu.Unlock()
		return nil
	case add:
		m.Aliases = append(slices.Clone(m.Aliases), alias)
	case !has:
		s.mu.Unlock()
		return fmt.Errorf("%q: %w %s", alias, ErrNotAlias, id)
	default:
		m.Aliases = slices.DeleteFunc(slices.Clone(m.Aliases), func(a string) bool { return a == alias })
	}
	cfg := s.cfg.WithSection(id, m)
	if err := cfg.Validate(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("%s: %w", alias, err)
	}
	s.cfg = cfg
	s.mu.Unlock()
	if s.o.ConfigPath == "" {
		return nil
	}
	if err := cfg.Save(s.o.ConfigPath); err != nil {
		return fmt.Errorf("the alias %s of %s holds for this run, but saving the configuration failed: %w", alias, id, err)
	}
	return nil
}
