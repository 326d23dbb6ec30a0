package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/fit"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/service"
)

// serviceBackend drives a running service for the UI. Most of Backend is the service's own methods
// (SetPinned, Config, Activity, the peers, lending, the builds, …), promoted from the embedded
// Service; the Hub part is the service's Hub manager (hubbackend.go). The methods below are those
// the service names or shapes differently.
type serviceBackend struct {
	*service.Service
	*managerHub // nil when the service made no Hub
}

var _ Backend = (*serviceBackend)(nil)

// newServiceBackend is the backend of a service made by service.New.
func newServiceBackend(svc *service.Service) *serviceBackend {
	return &serviceBackend{Service: svc, managerHub: serviceHub(svc)}
}

func (sb *serviceBackend) Snapshot() Snapshot {
	cfg := sb.Service.Config()
	s := Snapshot{
		ListenAddr: sb.Service.ListenAddr(),
		Server:     sb.Service.LlamaServer(),
		ModelDirs:  cfg.ModelDirsResolved(),
		LogDir:     sb.Service.LogDir(),
		Peers:      sb.Service.PeerList(),
		Workers:    sb.Service.Workers(),
		Lending:    sb.Service.Lending(),
		Budget:     sb.Service.Engine().Budget(),
		Skipped:    sb.Service.Catalog().Warnings(),
	}
	if s.ListenAddr == "" {
		s.ListenAddr = cfg.Listen
	}
	if err := sb.Service.ListenErr(); err != nil {
		s.ListenErr = listenProblem(cfg.Listen, err)
	}
	if addr, err := sb.Service.OllamaListen(); err != nil {
		s.OllamaErr = err.Error()
	} else {
		s.OllamaAddr = addr
	}
	s.UpdateVersion, s.UpdateURL = updateFrom(sb.Service.Update())
	if h := sb.Service.Hub(); h != nil {
		s.Downloads = downloadsFrom(h.List())
	}
	for _, v := range sb.Service.Models() {
		// A model that left the catalog is listed while it still runs or has failed.
		if v.Meta != nil || v.State.Running() || v.State == service.StateFailed {
			m := Model{Model: v}
			if m.State == service.StateFailed {
				m.Cause, m.CauseDo, m.Fix = loadCause(sb.Logs(m.ID))
			}
			s.Models = append(s.Models, m)
		}
	}
	return s
}

// downloadsFrom keeps the pulls running or stopped with something to resume, oldest first.
func downloadsFrom(pulls []hub.PullStatus) []hub.PullStatus {
	var out []hub.PullStatus
	for i := len(pulls) - 1; i >= 0; i-- { // List is newest first
		switch p := pulls[i]; p.State {
		case hub.StateDownloading, hub.StatePaused, hub.StateFailed:
			out = append(out, p)
		}
	}
	return out
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
	return sb.Service.Engine().Subscribe()
}

func (sb *serviceBackend) Load(name string) error { return sb.Service.Engine().StartLoad(name) }

func (sb *serviceBackend) Unload(ctx context.Context, name string, force bool) error {
	return sb.Service.Engine().Unload(ctx, name, force)
}

func (sb *serviceBackend) Logs(name string) []string { return sb.Service.Engine().Logs(name) }

// EditConfig changes the configuration through the service's one writer (Service.Edit): on the
// configuration in force, validated, saved, applied, and rescanned before it returns when it
// names models differently.
func (sb *serviceBackend) EditConfig(change func(*config.Config) error) error {
	return sb.Service.Edit(change)
}

func (sb *serviceBackend) Rescan(ctx context.Context) error { return sb.Service.Catalog().Scan(ctx) }

func (sb *serviceBackend) FindLlamaServer() string { return sb.Service.FindLlamaServer().Path }

// ModelsDir returns Llamatray's own model folder, and makes sure it is scanned: when the usual
// folders are not scanned and it is not listed, it is added to model_dirs.
func (sb *serviceBackend) ModelsDir() (string, error) {
	dir, err := config.DataModelsDir()
	if err != nil {
		return "", err
	}
	if slices.Contains(sb.Service.Config().ModelDirsResolved(), dir) {
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
	return Offers{Hub: sb.Service.Hub() != nil, Activity: true, InstallBuild: true, EstimateWith: true, Peers: true, Workers: true}
}

// EstimateWith asks the service, and judges against the engine's budget now.
func (sb *serviceBackend) EstimateWith(id string, cfg config.Config) (int64, bool, fit.Room, error) {
	need, learned, err := sb.Service.EstimateWith(id, cfg)
	return need, learned, sb.Service.Engine().Room(), err
}

// DraftCandidates asks the catalog, which compares the models' vocabularies from their headers.
func (sb *serviceBackend) DraftCandidates(id string) ([]string, map[string]string, error) {
	return sb.Service.Catalog().DraftCandidates(id)
}
