package service

// The configuration in force, mapped onto the engine: its limits, each model's settings and the
// estimate parameters that match them; a new configuration applied live; pins saved.

import (
	"fmt"
	"strconv"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
)

// limits maps the configuration to the engine's live limits.
func limits(cfg config.Config, ls LlamaServer) engine.Limits {
	hint := ls.Hint
	if ls.Err != "" {
		hint = ls.Err + ". " + hint
	}
	l := engine.Limits{
		Binary:       ls.Path,
		BinaryHint:   hint,
		MemoryLimit:  int64(cfg.MemoryLimit),
		Reserve:      int64(cfg.MemoryReserve),
		MaxLoaded:    cfg.MaxLoaded,
		DeviceLimits: deviceLimits(cfg),
		FitTarget:    ls.FitTarget,
		QueueTimeout: cfg.QueueTimeout.Std(),
		FairWait:     cfg.FairWait.Std(),
		LoadTimeout:  cfg.LoadTimeout.Std(),
		StopTimeout:  cfg.StopTimeout.Std(),
	}
	if l.QueueTimeout < 0 {
		l.QueueTimeout = 100 * 365 * 24 * time.Hour
	}
	if l.FairWait <= 0 {
		l.FairWait = -1 // "0": off, as the configuration documents it: busy models are never drained for a queued load
	}
	if l.LoadTimeout < 0 {
		l.LoadTimeout = 100 * 365 * 24 * time.Hour
	}
	return l
}

func (s *Service) config() config.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// settings maps a model's configuration to engine settings, including the llama-server flags.
func (s *Service) settings(id string) engine.Settings {
	cfg := s.config()
	ms := cfg.ModelSettings(id)
	var args []string
	if ms.GPULayers != nil {
		args = append(args, "-ngl", strconv.Itoa(*ms.GPULayers))
	}
	switch ms.FlashAttn {
	case "on", "off":
		args = append(args, "-fa", ms.FlashAttn)
	}
	if ms.Parallel > 0 {
		args = append(args, "-np", strconv.Itoa(ms.Parallel))
	}
	if ms.CacheType != "" {
		args = append(args, "-ctk", ms.CacheType, "-ctv", ms.CacheType)
	}
	draft, err := draftArgs(s.cat, id, ms) // draft.go
	args = append(append(args, draft...), ms.Args...)
	st := engine.Settings{Args: args, CtxSize: ms.CtxSize, Pinned: ms.Pinned, LoadOnStart: ms.LoadOnStart, Workers: ms.Workers}
	if err != nil {
		st.Refuse = err.Error()
	}
	if ms.IdleSleep != nil {
		st.IdleSleep = ms.IdleSleep.Std()
	}
	if ms.IdleUnload != nil {
		st.IdleUnload = ms.IdleUnload.Std()
	}
	return st
}

// estimateParams tells the catalog how each model will be run, so its estimate matches.
func (s *Service) estimateParams(id string) catalog.EstimateParams {
	return s.paramsFor(s.config().ModelSettings(id))
}

// paramsFor is how a model with settings ms is run, for the estimate.
func (s *Service) paramsFor(ms config.Model) catalog.EstimateParams {
	// ContextSize 0 is the model's trained context, for the estimate as for llama-server's -c.
	p := catalog.EstimateParams{ContextSize: ms.CtxSize, Parallel: ms.Parallel, FlashAttn: ms.FlashAttn, CacheType: ms.CacheType, Draft: ms.Draft}
	if s.gpu {
		p.GPULayers = -1
		if ms.GPULayers != nil {
			p.GPULayers = *ms.GPULayers
		}
		p.DraftGPULayers = -1 // llama-server's auto offloads what fits
		if ms.DraftGPULayers != nil {
			p.DraftGPULayers = *ms.DraftGPULayers
		}
	}
	return p
}

// SetPinned pins or unpins a model (a pinned model is never evicted by memory pressure or idle
// timers) at once and for good: the choice is saved in the configuration file as the model's
// `pinned`, so it still holds after a restart. POST /models/pin, `llamatray pin` and the tray all
// pin through here. When the engine took the pin but the file could not be written, the error
// says so (the pin then lasts this run).
func (s *Service) SetPinned(name string, pinned bool) error {
	id, err := s.eng.Resolve(name)
	if err != nil {
		return err
	}
	if err := s.eng.SetPinned(id, pinned); err != nil {
		return err
	}
	return s.savePinned(id, pinned)
}

// savePinned records a pin in the configuration in force and in its file, through the one writer
// (edit.go). The pin holds for this run even when the file cannot be written.
func (s *Service) savePinned(id string, pinned bool) error {
	refused, notSaved := s.keep(func(c *config.Config) error {
		m, _ := c.Section(id) // a variant's pin is its own
		if m.Pinned == pinned {
			return config.ErrUnchanged
		}
		m.Pinned = pinned
		*c = c.WithSection(id, m)
		return nil
	})
	if refused != nil {
		return fmt.Errorf("%s is pinned for this run, but the configuration refused it: %w", id, refused)
	}
	if notSaved != nil {
		return fmt.Errorf("%s is pinned for this run, but %w", id, notSaved)
	}
	return nil
}

// variantsOf is every model's variant names, by model ID, for the catalog.
func variantsOf(cfg config.Config) map[string][]string {
	out := map[string][]string{}
	for id := range cfg.Models {
		if names := cfg.VariantNames(id); len(names) > 0 {
			out[id] = names
		}
	}
	return out
}

// deviceLimits is [device_memory_limit] in bytes, by device name; nil when none is set.
func deviceLimits(cfg config.Config) map[string]int64 {
	if len(cfg.DeviceMemoryLimit) == 0 {
		return nil
	}
	out := make(map[string]int64, len(cfg.DeviceMemoryLimit))
	for d, n := range cfg.DeviceMemoryLimit {
		out[d] = int64(n)
	}
	return out
}
