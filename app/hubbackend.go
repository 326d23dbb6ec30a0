package app

import (
	"context"

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
}

// hubSource is a Backend that also offers models from the Hub.
type hubSource interface{ Hub() HubBackend }

// managerHub drives a hub.Manager: the service's, or a test's.
type managerHub struct {
	m      *hub.Manager
	room   func() fit.Room
	params func() catalog.EstimateParams
	has    func(name string) bool // on this machine already
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
		has:    func(name string) bool { _, ok := svc.Catalog().Lookup(name); return ok },
	}
}

// Hub makes the service backend a hubSource.
func (sb *serviceBackend) Hub() HubBackend { return serviceHub(sb.svc) }
