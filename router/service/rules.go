package service

import (
	"log/slog"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/httpapi"
)

// requestRules compiles the request rules of every model and variant of cfg that has any
// (set_params, strip_params, default_params), a variant's layered over its model's.
func requestRules(cfg config.Config, log *slog.Logger) httpapi.RuleSet {
	out := httpapi.RuleSet{}
	add := func(id string) {
		m := cfg.ModelSettings(id)
		r, err := httpapi.NewRules(m.SetParams, m.StripParams, m.DefaultParams)
		if err != nil { // config validation refuses what could fail here
			log.Warn("request rules ignored", "model", id, "err", err)
			return
		}
		if r != nil {
			out[id] = r
		}
	}
	for id, m := range cfg.Models {
		add(id)
		for name := range m.Variants {
			add(id + config.VariantSep + name)
		}
	}
	return out
}
