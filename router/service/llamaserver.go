package service

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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

// findLlamaServer looks for llama-server: the configured path, $LLAMA_SERVER, the installed build,
// then the usual places (router/locate).
func (s *Service) findLlamaServer(configured string) LlamaServer {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	e := locate.OSEnv()
	b, installed := s.currentBuild(e)
	if installed {
		e.Installed = b.Path
	}
	r, err := locate.FindWith(ctx, e, configured)
	ls := LlamaServer{Path: r.Path, Source: r.Source, Version: r.Version, Hint: locate.InstallHint()}
	if err != nil {
		ls.Path = ""
		ls.Err = err.Error()
	}
	ls.FitTarget = err == nil && s.takesFitTarget(ctx, r.Path)
	if installed && r.Source == locate.SourceInstalled {
		ls.Build = b.Build
	} else if r.Build > 0 {
		ls.Build = "b" + strconv.Itoa(r.Build)
	}
	return ls
}

// currentBuild is the build in use of Llamatray's own folder, else of a folder an installer
// bundled beside the executable in the same layout.
func (s *Service) currentBuild(e locate.Env) (releases.Build, bool) {
	if b, ok := s.installer.Store.Current(); ok {
		return b, true
	}
	exe, err := e.Executable()
	if err != nil {
		return releases.Build{}, false
	}
	for _, root := range releases.BundledRoots(exe) {
		if b, ok := (releases.Store{Root: root}).Current(); ok {
			return b, true
		}
	}
	return releases.Build{}, false
}

// FindLlamaServer searches llama-server again (one installed since Llamatray started, by a
// package manager or by hand) and returns what is in use now: the next load uses it, running
// children keep theirs. No restart is needed.
func (s *Service) FindLlamaServer() LlamaServer {
	s.refreshLlamaServer()
	return s.LlamaServer()
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
	b, err := s.installs.track(ctx, func(ctx context.Context, p func(releases.Progress)) (releases.Build, error) {
		return s.installer.Install(ctx, req, p)
	}, progress)
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

// Daily update check timing: the first check a while after the start, then once a day.
const (
	firstUpdateCheck = 2 * time.Minute
	updateEvery      = 24 * time.Hour
)

// updateDaily installs llama.cpp's newer release build after first, then every every, while the
// llama_server_update setting is on and the llama-server in use is one Llamatray installed. It runs
// until ctx ends.
func (s *Service) updateDaily(ctx context.Context, first, every time.Duration) {
	repeat(ctx, first, every, func(ctx context.Context) { s.checkUpdate(ctx) })
}

// checkUpdate is one daily check: when the setting is on and the llama-server in use is one
// Llamatray installed, it installs the latest release if that is newer. It reports whether it
// looked.
func (s *Service) checkUpdate(ctx context.Context) bool {
	ls := s.LlamaServer()
	if !s.config().LlamaServerUpdate || ls.Source != locate.SourceInstalled {
		return false
	}
	b, err := s.InstallBuild(ctx, releases.Request{Build: releases.Latest, Update: true}, nil)
	if err != nil {
		s.log.Warn("daily llama-server update failed", "err", err)
	} else if b.Build != ls.Build {
		s.log.Info("llama-server updated", "build", b.Build, "was", ls.Build)
	}
	return true
}
