package service

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/httpapi"
	"github.com/llamatray/llamatray/router/hub"
)

// newHub builds the Hugging Face Hub manager: the Hub's own environment (HF_ENDPOINT, HF_TOKEN
// or the token file, HF_HUB_CACHE / HF_HOME) decides where it talks and downloads to.
func (s *Service) newHub() *hub.Manager {
	return hub.NewManager(hub.FromEnv(nil), hub.Cache{Dir: hub.CacheDir(nil)}, s.pulled, s.log)
}

// pulled rescans the model folders after a pull and says whether the model is listed.
func (s *Service) pulled(name string, paths []string) error {
	s.cat.SetDirs(s.config().ModelDirsResolved())
	if _, ok := s.cat.Lookup(name); ok {
		s.eng.SyncCatalog() // a client told "downloaded" resolves the name at once
		return nil
	}
	dir := s.hub.Cache().Dir
	if !slices.Contains(s.cat.Dirs(), filepath.Clean(dir)) {
		return fmt.Errorf("%s was downloaded to %s, which is not scanned: turn scan_default_dirs on or add that folder to model_dirs", name, dir)
	}
	return fmt.Errorf("%s was downloaded to %s but the catalog did not list it: %v", name, dir, s.cat.Warnings())
}

// hubOptions are the router's Hub settings.
func (s *Service) hubOptions(autoPull bool) *httpapi.HubOptions {
	return &httpapi.HubOptions{
		Manager:  s.hub,
		Installs: &s.installs,
		AutoPull: autoPull,
		Params:   s.NewModelParams,
		Rescan: func() {
			if err := s.rescan(context.Background()); err != nil {
				s.log.Warn("rescan failed", "err", err)
			}
		},
	}
}

// rescan scans the model folders and has the engine take the result in before it returns, so an
// answer sent next already lists (or no longer lists) what changed.
func (s *Service) rescan(ctx context.Context) error {
	if err := s.cat.Scan(ctx); err != nil {
		return err
	}
	s.eng.SyncCatalog()
	return nil
}

// Hub returns the Hugging Face Hub manager (pulls, search, removal).
func (s *Service) Hub() *hub.Manager { return s.hub }

// NewModelParams are the load parameters a model not yet on disk would get, for fit badges.
func (s *Service) NewModelParams() catalog.EstimateParams { return s.estimateParams("") }
