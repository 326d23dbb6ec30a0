package service

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/wire"
)

// installs is the llama-server install in progress, or the last one, as a download of
// GET /api/downloads, with the cancel of a running one.
type installs struct {
	mu     sync.Mutex // guards d and cancel
	d      *wire.Download
	cancel context.CancelFunc // nil when no install runs
}

// Downloads is the install as a download list (none, or one).
func (in *installs) Downloads() []wire.Download {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.d == nil {
		return nil
	}
	d := *in.d
	d.Actions = []string{}
	if in.cancel != nil {
		d.Actions = []string{"cancel"}
	}
	return []wire.Download{d}
}

// CancelInstall stops the running install of build ("" or "llama-server": whichever runs).
func (in *installs) CancelInstall(build string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cancel == nil || in.d == nil || build != "" && build != "llama-server" && build != in.d.Name {
		return false
	}
	in.cancel()
	return true
}

// track runs one install with a context its cancel ends, recording its progress.
func (in *installs) track(ctx context.Context, run func(context.Context, func(releases.Progress)) (releases.Build, error), progress func(releases.Progress)) (releases.Build, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in.mu.Lock()
	in.d = &wire.Download{Kind: "llama-server", Name: "llama-server", Status: "starting", Started: time.Now().UTC()}
	in.cancel = cancel
	in.mu.Unlock()
	b, err := run(ctx, func(p releases.Progress) {
		in.mu.Lock()
		if p.Build != "" {
			in.d.Name = p.Build
		}
		switch p.Phase {
		case releases.PhaseDownloading:
			in.d.Status = "downloading"
			in.d.BytesDone, in.d.BytesTotal, in.d.BytesPerSecond, in.d.ETASeconds = p.Done, p.Total, p.BytesPerSecond, p.ETASeconds
		case releases.PhaseVerified:
			in.d.Status, in.d.BytesPerSecond, in.d.ETASeconds = "verifying", 0, 0
			in.d.BytesDone = in.d.BytesTotal
		case releases.PhaseUnpacking:
			in.d.Status = "unpacking"
		}
		in.mu.Unlock()
		if progress != nil {
			progress(p)
		}
	})
	in.mu.Lock()
	in.cancel = nil
	switch {
	case err == nil:
		in.d.Status, in.d.Error = "installed", ""
	case ctx.Err() != nil:
		in.d.Status, in.d.Error = "cancelled", err.Error()
	default:
		in.d.Status, in.d.Error = "failed", err.Error()
	}
	in.mu.Unlock()
	return b, err
}

// rememberPulls keeps unfinished pulls in the state folder, offered again after a restart.
func (s *Service) rememberPulls() {
	dir := stateDir()
	if dir == "" {
		return
	}
	if err := s.hub.Remember(filepath.Join(dir, "pulls.json")); err != nil {
		s.log.Warn("unfinished downloads", "err", err)
	}
}
