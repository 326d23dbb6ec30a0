package service

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/llamatray/llamatray/router/locate"
	"github.com/llamatray/llamatray/router/releases"
)

// newInstaller returns the installer of llama.cpp release builds into <data dir>/llama-server. Its
// InUse asks the engine, so a build a model runs on is never replaced or removed.
func (s *Service) newInstaller() *releases.Installer {
	root, err := releases.DefaultRoot()
	if err != nil {
		root = filepath.Join(s.LogDir(), "llama-server") // no data folder: still somewhere writable
	}
	return &releases.Installer{
		Client: &releases.Client{},
		Store:  releases.Store{Root: root},
		InUse:  s.buildInUse,
		Verify: locate.Version,
		Logger: s.log,
	}
}

// buildInUse reports whether a running child was started from a file under dir.
func (s *Service) buildInUse(dir string) bool {
	if s.eng == nil {
		return false
	}
	prefix := filepath.Clean(dir) + string(filepath.Separator)
	for _, m := range s.eng.Models() {
		if m.Binary != "" && strings.HasPrefix(filepath.Clean(m.Binary), prefix) {
			return true
		}
	}
	return false
}

// locateEnv is the search environment, with the installed build in it.
func (s *Service) locateEnv() locate.Env {
	e := locate.OSEnv()
	e.Installed = s.installer.Store.CurrentBinary()
	return e
}

// refreshLlamaServer searches llama-server again and gives the engine the result: the next load
// uses it, running children keep theirs.
func (s *Service) refreshLlamaServer() {
	cfg := s.config()
	ls := s.findLlamaServer(cfg.LlamaServer)
	s.mu.Lock()
	s.llama = ls
	s.mu.Unlock()
	s.eng.SetLimits(limits(cfg, ls))
	if ls.Path != "" {
		s.log.Info("using llama-server", "path", ls.Path, "version", ls.Version, "found_in", ls.Source, "build", ls.Build)
	}
}

// InstalledBuilds lists the llama-server builds Llamatray installed, newest first.
func (s *Service) InstalledBuilds() ([]releases.Build, error) { return s.installer.Store.Builds() }

// PlanBuild says which archive of a release would be installed on this machine, and why.
func (s *Service) PlanBuild(ctx context.Context, req releases.Request) (releases.Release, releases.Choice, error) {
	return s.installer.Plan(ctx, req)
}

// InstallBuild installs a llama.cpp release build and switches new loads to it (unless the
// configuration or $LLAMA_SERVER names another llama-server, which still wins).
func (s *Service) InstallBuild(ctx context.Context, req releases.Request, progress func(releases.Progress)) (releases.Build, error) {
	b, err := s.installer.Install(ctx, req, progress)
	if err != nil {
		return b, err
	}
	s.refreshLlamaServer()
	return b, nil
}

// UseBuild switches new loads to an installed build ("previous" goes back to the one before).
func (s *Service) UseBuild(build string) (releases.Build, error) {
	b, err := s.installer.Use(build)
	if err != nil {
		return b, err
	}
	s.refreshLlamaServer()
	return b, nil
}
