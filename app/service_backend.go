package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"syscall"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/fit"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/view"
	"github.com/llamatray/llamatray/router/wire"
)

// serviceBackend drives a running service for the UI.
type serviceBackend struct {
	svc *service.Service
	log *slog.Logger
}

var _ Backend = (*serviceBackend)(nil)

func (sb *serviceBackend) Snapshot() Snapshot {
	cfg := sb.svc.Config()
	ls := sb.svc.LlamaServer()
	s := Snapshot{
		ListenAddr: sb.svc.ListenAddr(),
		ServerPath: ls.Path,
		ServerHint: ls.Hint,
		ServerFrom: ls.Source,
		ServerVer:  ls.Version,
		ModelDirs:  cfg.ModelDirsResolved(),
		LogDir:     sb.svc.LogDir(),
		Peers:      sb.svc.PeerList(),
		Workers:    sb.svc.Workers(),
		Lending:    sb.svc.Lending(),
		Budget:     sb.svc.Engine().Budget(),
		Skipped:    sb.svc.Catalog().Warnings(),
	}
	if s.ListenAddr == "" {
		s.ListenAddr = cfg.Listen
	}
	if err := sb.svc.ListenErr(); err != nil {
		s.ListenErr = listenProblem(cfg.Listen, err)
	}
	if addr, err := sb.svc.OllamaListen(); err != nil {
		s.OllamaErr = err.Error()
	} else {
		s.OllamaAddr = addr
	}
	s.UpdateVersion, s.UpdateURL = updateFrom(sb.svc.Update())
	if h := sb.svc.Hub(); h != nil {
		s.Downloads = downloadsFrom(h.List())
	}
	for _, v := range sb.svc.Models() {
		// A model that left the catalog is listed while it still runs or has failed.
		if v.Meta != nil || v.State.Running() || v.State == service.StateFailed {
			m := modelFrom(v)
			if m.State == service.StateFailed {
				m.Cause, m.CauseDo, m.Fix = loadCause(sb.Logs(m.ID))
			}
			s.Models = append(s.Models, m)
		}
	}
	return s
}

// downloadsFrom keeps the pulls running or stopped with something to resume, oldest first.
func downloadsFrom(pulls []hub.PullStatus) []Download {
	var out []Download
	for i := len(pulls) - 1; i >= 0; i-- { // List is newest first
		switch p := pulls[i]; p.State {
		case hub.StateDownloading, hub.StatePaused, hub.StateFailed:
			out = append(out, Download{Model: p.Model, State: p.State, Done: p.Progress.Done, Total: p.Progress.Total,
				Rate: p.Progress.Rate, Left: p.Progress.Left, Error: p.Error})
		}
	}
	return out
}

// modelFrom adapts the service's view of a model for display.
func modelFrom(v view.Model) Model {
	m := Model{ModelStatus: v.ModelStatus, CtxSize: v.CtxSize}
	if cm := v.Meta; cm != nil {
		m.Architecture = cm.Architecture
		m.Parameters = catalog.ParamsLabel(cm.Parameters)
		m.Quantization = cm.Quantization
		m.SizeBytes = cm.SizeBytes
		m.ContextLength = cm.ContextLength
		m.Files = append([]string(nil), cm.Files...)
		m.EstimateError = cm.EstimateError
	}
	return m
}

// listenProblem explains a listener error in a few words.
func listenProblem(addr string, err error) string {
	if errors.Is(err, syscall.EADDRINUSE) {
		return addr + " is already in use by another program"
	}
	if errors.Is(err, syscall.EACCES) {
		return "not allowed to listen on " + addr
	}
	return err.Error()
}

func (sb *serviceBackend) Subscribe() (<-chan service.Event, func()) {
	return sb.svc.Engine().Subscribe()
}

func (sb *serviceBackend) Load(name string) error { return sb.svc.Engine().StartLoad(name) }

func (sb *serviceBackend) Unload(ctx context.Context, name string, force bool) error {
	return sb.svc.Engine().Unload(ctx, name, force)
}

// SetPinned pins through the service: at once, and saved in the config file (as POST /models/pin).
func (sb *serviceBackend) SetPinned(name string, pinned bool) error {
	return sb.svc.SetPinned(name, pinned)
}

func (sb *serviceBackend) Logs(name string) []string { return sb.svc.Engine().Logs(name) }

func (sb *serviceBackend) Config() config.Config { return sb.svc.Config() }

// EditConfig changes the configuration through the service's one writer (Service.Edit): on the
// configuration in force, validated, saved, applied, and rescanned before it returns when it
// names models differently.
func (sb *serviceBackend) EditConfig(change func(*config.Config) error) error {
	return sb.svc.Edit(change)
}

func (sb *serviceBackend) Rescan(ctx context.Context) error { return sb.svc.Catalog().Scan(ctx) }

func (sb *serviceBackend) FindLlamaServer() string { return sb.svc.FindLlamaServer().Path }

// ModelsDir returns Llamatray's own model folder, and makes sure it is scanned: when the usual
// folders are not scanned and it is not listed, it is added to model_dirs.
func (sb *serviceBackend) ModelsDir() (string, error) {
	dir, err := config.DataModelsDir()
	if err != nil {
		return "", err
	}
	if slices.Contains(sb.svc.Config().ModelDirsResolved(), dir) {
		return dir, nil
	}
	err = sb.EditConfig(func(c *config.Config) error {
		if !slices.Contains(c.ModelDirsResolved(), dir) {
			c.ModelDirs = append(c.ModelDirs, dir)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("add %s to the model folders: %w", dir, err)
	}
	return dir, nil
}

// Offers: the running service has every part; the Hub unless the service made none.
func (sb *serviceBackend) Offers() Offers {
	return Offers{Hub: sb.svc.Hub() != nil, Activity: true, InstallBuild: true, EstimateWith: true, Peers: true, Workers: true}
}

// Activity is the service's record of the last hour, as GET /api/activity serves it.
func (sb *serviceBackend) Activity() wire.Activity { return sb.svc.Activity() }

// UpdateChanged is closed when the service's next check of Llamatray's releases ends.
func (sb *serviceBackend) UpdateChanged() <-chan struct{} { return sb.svc.UpdateChanged() }

// EstimateWith asks the service, and judges against the engine's budget now.
func (sb *serviceBackend) EstimateWith(id string, cfg config.Config) (int64, bool, fit.Room, error) {
	need, learned, err := sb.svc.EstimateWith(id, cfg)
	return need, learned, sb.svc.Engine().Room(), err
}

// LlamaServerFlags asks the service, which reads them once per llama-server binary.
func (sb *serviceBackend) LlamaServerFlags(ctx context.Context) ([]string, error) {
	return sb.svc.LlamaServerFlags(ctx)
}

// DraftCandidates asks the catalog, which compares the models' vocabularies from their headers.
func (sb *serviceBackend) DraftCandidates(id string) ([]string, map[string]string, error) {
	return sb.svc.Catalog().DraftCandidates(id)
}

// PlanBuild asks the service which archive it would install.
func (sb *serviceBackend) PlanBuild(ctx context.Context, req releases.Request) (releases.Release, releases.Choice, error) {
	return sb.svc.PlanBuild(ctx, req)
}

// InstallBuild installs a llama.cpp release build through the service.
func (sb *serviceBackend) InstallBuild(ctx context.Context, req releases.Request, progress func(releases.Progress)) (releases.Build, error) {
	return sb.svc.InstallBuild(ctx, req, progress)
}

func (sb *serviceBackend) SetLending(on bool) error         { return sb.svc.SetLending(on) }
func (sb *serviceBackend) LendConfigLines() (string, error) { return sb.svc.LendConfigLines() }
func (sb *serviceBackend) NewLendToken() error              { return sb.svc.NewLendToken() }
