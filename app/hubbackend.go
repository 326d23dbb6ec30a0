package app

import (
	"context"
	"fmt"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/fit"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/service"
)

// HubBackend is what the Get-models window drives: search, a repo's quants with fit badges, and
// pulls with their progress. Methods may block; the window calls them off the UI thread.
type HubBackend interface {
	Search(ctx context.Context, text string) ([]hub.Repo, error)
	Quants(ctx context.Context, repo string) ([]hub.QuantFit, error)
	// Pull starts downloading ORG/REPO:QUANT and returns at once.
	Pull(ctx context.Context, name string) (hub.PullStatus, error)
	// Cancel stops a running pull; what it wrote is removed.
	Cancel(name string) bool
	// Events delivers pull progress until cancel is called.
	Events() (events <-chan hub.Event, cancel func())
	// Pulled tells a model pulled from the Hub (and the ORG/REPO:QUANT it was pulled as) from a
	// user's own file.
	Pulled(id string) (name string, ok bool)
	// Remove deletes a pulled model's files from the Hub cache, as `llamatray rm` does: its
	// snapshot links and the blobs no other snapshot uses. It returns the paths removed.
	Remove(id string) ([]string, error)
	// Pause stops a running pull, keeping what came for a resume.
	Pause(name string) bool
	// Resume goes on with a paused or failed pull, from what came (after a restart too).
	Resume(ctx context.Context, name string) error
	// Discard stops a pull and deletes what it left on disk.
	Discard(name string) error
	// TokenSource says where the Hub token in use comes from, "" when there is none.
	TokenSource() string
	// SaveToken keeps token ("" removes it) where the Hub's own tools read it ($HF_HOME/token)
	// and uses it from the next request on; it returns the file's path.
	SaveToken(token string) (string, error)
}

// hubSource is a Backend that also offers models from the Hub.
type hubSource interface{ Hub() HubBackend }

// managerHub drives a hub.Manager: the service's, or a test's.
type managerHub struct {
	m      *hub.Manager
	room   func() fit.Room
	params func() catalog.EstimateParams
	lookup func(name string) (catalog.Model, bool) // the catalog: what is on this machine already
}

func (h *managerHub) Pause(name string) bool { return h.m.Pause(name) }

func (h *managerHub) Resume(ctx context.Context, name string) error {
	ref, err := hub.ParseRef(name)
	if err != nil {
		return err
	}
	_, err = h.m.Start(ctx, ref)
	return err
}

func (h *managerHub) Discard(name string) error {
	_, err := h.m.Discard(name)
	return err
}

func (h *managerHub) TokenSource() string { return hub.TokenSource(nil) }

func (h *managerHub) SaveToken(token string) (string, error) { return h.m.SaveToken(nil, token) }

func (h *managerHub) has(name string) bool { _, ok := h.lookup(name); return ok }

func (h *managerHub) Pulled(id string) (string, bool) {
	m, ok := h.lookup(id)
	if !ok {
		return "", false
	}
	if _, _, ok := hub.LocalFiles(m); !ok {
		return "", false
	}
	return m.HubName, true
}

func (h *managerHub) Remove(id string) ([]string, error) {
	m, ok := h.lookup(id)
	if !ok {
		return nil, fmt.Errorf("model %q is not on this machine", id)
	}
	cache, files, ok := hub.LocalFiles(m)
	if !ok {
		return nil, fmt.Errorf("model %q is the file %s, not a model pulled from the Hugging Face Hub", id, m.Path)
	}
	removed, err := cache.Remove(m.HubRepo, files)
	if err != nil {
		return nil, fmt.Errorf("removing %s: %w", id, err)
	}
	return removed, nil
}

func (h *managerHub) Search(ctx context.Context, text string) ([]hub.Repo, error) {
	return h.m.Client().Search(ctx, text, 30)
}

func (h *managerHub) Quants(ctx context.Context, repo string) ([]hub.QuantFit, error) {
	l, err := h.m.Client().Files(ctx, repo)
	if err != nil {
		return nil, err
	}
	return h.m.Client().Badges(ctx, l, h.params(), h.room(), h.has, true), nil
}

func (h *managerHub) Pull(ctx context.Context, name string) (hub.PullStatus, error) {
	ref, err := hub.ParsePasted(name)
	if err != nil {
		return hub.PullStatus{}, err
	}
	return h.m.Start(ctx, ref)
}

func (h *managerHub) Cancel(name string) bool { return h.m.Cancel(name) }

func (h *managerHub) Events() (<-chan hub.Event, func()) { return h.m.Subscribe() }

// serviceHub is the running service's Hub.
func serviceHub(svc *service.Service) HubBackend {
	return &managerHub{
		m: svc.Hub(),
		room: func() fit.Room {
			return svc.Engine().Room()
		},
		params: svc.NewModelParams,
		lookup: svc.Catalog().Lookup,
	}
}

// Hub makes the service backend a hubSource.
func (sb *serviceBackend) Hub() HubBackend { return serviceHub(sb.svc) }
