package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/internal/safetext"
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
	if alias == "" || strings.ContainsAny(alias, "\\") {
		return fmt.Errorf("%q cannot be a model's name", alias)
	}
	if err := safetext.Check(alias); add && err != nil {
		return fmt.Errorf("cannot be a model's name: %w", err) // shown in lists and on terminals
	}
	id, err := s.eng.Resolve(name)
	if err != nil {
		return err
	}
	if err := s.saveAlias(id, alias, add); err != nil {
		return err
	}
	if err := s.rescan(context.Background()); err != nil {
		return fmt.Errorf("the alias is saved, but rescanning the models failed: %w", err)
	}
	return nil
}

// saveAlias records the alias change in the configuration in force and in its file, through the
// one writer (edit.go). The alias holds for this run even when the file cannot be written.
func (s *Service) saveAlias(id, alias string, add bool) error {
	refused, notSaved := s.keep(func(c *config.Config) error {
		m, _ := c.Section(id)
		has := slices.Contains(m.Aliases, alias)
		switch {
		case add && has:
			return config.ErrUnchanged
		case add:
			m.Aliases = append(m.Aliases, alias)
		case !has:
			return fmt.Errorf("%q: %w %s", alias, ErrNotAlias, id)
		default:
			m.Aliases = slices.DeleteFunc(m.Aliases, func(a string) bool { return a == alias })
		}
		*c = c.WithSection(id, m)
		return nil
	})
	switch {
	case errors.Is(refused, ErrNotAlias):
		return refused
	case refused != nil:
		return fmt.Errorf("%s: %w", alias, refused)
	case notSaved != nil:
		return fmt.Errorf("the alias %s of %s holds for this run, but %w", alias, id, notSaved)
	}
	return nil
}
