package service

import (
	"fmt"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/config"
)

// EstimateWith is the memory model id needs when run as cfg (a configuration not applied yet)
// says. When that is how it runs now, it is the model's view's need (the footprint learned in an
// earlier load, else the estimate); otherwise the catalog's estimate for those settings. learned
// reports a footprint measured in an earlier load.
func (s *Service) EstimateWith(id string, cfg config.Config) (need int64, learned bool, err error) {
	ms := cfg.ModelSettings(id)
	if _, err := draftArgs(s.cat, id, ms); err != nil { // a draft its loads would refuse (draft.go)
		return 0, false, fmt.Errorf("estimate: %w", &catalog.SettingsError{Key: "draft", Reason: err.Error()})
	}
	p := s.paramsFor(ms)
	if p == s.estimateParams(id) {
		if v, err := s.Model(id); err == nil && v.EstimateBytes > 0 {
			return v.EstimateBytes, v.LearnedBytes > 0 && v.EstimateBytes == v.LearnedBytes, nil
		}
	}
	e, err := s.cat.EstimateWith(id, p)
	if err != nil {
		return 0, false, fmt.Errorf("estimate: %w", err)
	}
	return e.RAM + e.VRAM, false, nil
}
