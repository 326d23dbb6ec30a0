package service

import (
	"cmp"
	"context"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/update"
	"github.com/llamatray/llamatray/router/wire"
)

// releaseCheck is the daily check of Llamatray's own releases (update_check): its last result.
// It only reads the releases list; nothing is downloaded.
type releaseCheck struct {
	mu      sync.Mutex    // guards last and changed
	last    *wire.Update  // nil before the first check
	changed chan struct{} // closed when last changes, then replaced; nil until UpdateChanged asks
}

// Timing of the check of Llamatray's releases: a while after the start, then once a day.
const (
	firstReleaseCheck = 5 * time.Minute
	releaseCheckEvery = 24 * time.Hour
)

// checkReleasesDaily checks Llamatray's releases after first, then every every, while update_check
// is on. It runs until ctx ends.
func (s *Service) checkReleasesDaily(ctx context.Context, first, every time.Duration) {
	repeat(ctx, first, every, func(ctx context.Context) { s.CheckReleases(ctx) })
}

// CheckReleases is one check, when update_check is on: it reads the releases list
// ($LLAMATRAY_UPDATE_URL, else GitHub's) and keeps the result for Update. A failed check keeps the
// last result, with the error. It reports whether it looked.
func (s *Service) CheckReleases(ctx context.Context) bool {
	cfg := s.config()
	if !cfg.UpdateCheck {
		return false
	}
	v := cmp.Or(s.o.Version, "dev") // "dev" when the build sets none
	c := &update.Checker{Client: releases.Client{UserAgent: "Llamatray/" + v}}
	res, err := c.Check(ctx, v, cfg.UpdatePrerelease)
	var w wire.Update
	s.releases.mu.Lock()
	if err != nil {
		if s.releases.last != nil {
			w = *s.releases.last
		} else {
			w = wire.Update{Current: v, Message: "Could not check for a newer Llamatray"}
		}
		w.Error = err.Error()
	} else {
		w = res.Wire()
	}
	s.releases.last = &w
	if s.releases.changed != nil {
		close(s.releases.changed)
		s.releases.changed = nil
	}
	s.releases.mu.Unlock()
	switch {
	case err != nil:
		s.log.Warn("checking for a newer Llamatray failed", "err", err)
	case w.Available:
		s.log.Info("a newer Llamatray is released", "version", w.Latest, "url", w.URL, "running", v)
	default:
		s.log.Debug("checked Llamatray's releases", "result", w.Message)
	}
	return true
}

// Update is the last check of Llamatray's releases (as /api/status "update"); nil while
// update_check is off or before the first check.
func (s *Service) Update() *wire.Update {
	if !s.config().UpdateCheck {
		return nil
	}
	s.releases.mu.Lock()
	defer s.releases.mu.Unlock()
	if s.releases.last == nil {
		return nil
	}
	w := *s.releases.last
	return &w
}

// UpdateChanged returns a channel closed when the next check of Llamatray's releases ends, so that
// the app shows its result without polling.
func (s *Service) UpdateChanged() <-chan struct{} {
	s.releases.mu.Lock()
	defer s.releases.mu.Unlock()
	if s.releases.changed == nil {
		s.releases.changed = make(chan struct{})
	}
	return s.releases.changed
}
