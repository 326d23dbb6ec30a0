package app

import (
	"context"
	"fmt"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/fit"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/service"
)

// managerHub is the Hub part of a Backend over a hub.Manager: the service's, or a test's. A nil
// *managerHub is a backend without a Hub: every method answers ErrNotOffered or nothing.
type managerHub struct {
	m      *hub.Manager
	room   func() fit.Room
	params func() catalog.EstimateParams
	lookup func(name string) (catalog.Model, bool) // the catalog: what is on this machine already
	// starters are the models suggested before a search; nil: hub.Starters.
	starters []hub.Starter
}

// errNoHub is what a backend without a Hub answers.
var errNoHub = fmt.Errorf("the Hugging Face Hub: %w", ErrNotOffered)

func (h *managerHub) PausePull(name string) bool { return h != nil && h.m.Pause(name) }

func (h *managerHub) ResumePull(ctx context.Context, name string) error {
	if h == nil {
		return errNoHub
	}
	ref, err := hub.ParseRef(name)
	if err != nil {
		return err
	}
	_, err = h.m.Start(ctx, ref)
	return err
}

func (h *managerHub) DiscardPull(name string) error {
	if h == nil {
		return errNoHub
	}
	_, err := h.m.Discard(name)
	return err
}

func (h *managerHub) HubTokenSource() string {
	if h == nil {
		return ""
	}
	return hub.TokenSource(nil)
}

func (h *managerHub) SaveHubToken(token string) (string, error) {
	if h == nil {
		return "", errNoHub
	}
	return h.m.SaveToken(nil, token)
}

func (h *managerHub) has(name string) bool { _, ok := h.lookup(name); return ok }

func (h *managerHub) Pulled(id string) (string, bool) {
	if h == nil {
		return "", false
	}
	m, ok := h.lookup(id)
	if !ok {
		return "", false
	}
	return hub.Pulled(m)
}

func (h *managerHub) RemovePulled(id string) ([]string, error) {
	if h == nil {
		return nil, errNoHub
	}
	m, ok := h.lookup(id)
	if !ok {
		return nil, fmt.Errorf("model %q is not on this machine", id)
	}
	return hub.RemovePulled(m)
}

func (h *managerHub) SearchHub(ctx context.Context, text string) ([]hub.Repo, error) {
	if h == nil {
		return nil, errNoHub
	}
	return h.m.Client().Search(ctx, text, 30)
}

func (h *managerHub) HubQuants(ctx context.Context, repo string) ([]hub.QuantFit, error) {
	if h == nil {
		return nil, errNoHub
	}
	l, err := h.m.Client().Files(ctx, repo)
	if err != nil {
		return nil, err
	}
	return h.m.Client().Badges(ctx, l, h.params(), h.room(), h.has, true), nil
}

func (h *managerHub) HubStarters(ctx context.Context) ([]hub.StarterFit, error) {
	if h == nil {
		return nil, errNoHub
	}
	list := h.starters
	if list == nil {
		list = hub.Starters
	}
	return h.m.Client().StartersOnHub(ctx, list, h.params(), h.room(), h.has)
}

func (h *managerHub) Pull(ctx context.Context, name string) (hub.PullStatus, error) {
	if h == nil {
		return hub.PullStatus{}, errNoHub
	}
	ref, err := hub.ParsePasted(name)
	if err != nil {
		return hub.PullStatus{}, err
	}
	return h.m.Start(ctx, ref)
}

func (h *managerHub) CancelPull(name string) bool { return h != nil && h.m.Cancel(name) }

func (h *managerHub) PullEvents() (<-chan hub.Event, func()) {
	if h == nil {
		return nil, func() {}
	}
	return h.m.Subscribe()
}

// serviceHub is the running service's Hub; nil when it has none.
func serviceHub(svc *service.Service) *managerHub {
	if svc.Hub() == nil {
		return nil
	}
	return &managerHub{
		m:      svc.Hub(),
		room:   svc.Engine().Room,
		params: svc.NewModelParams,
		lookup: svc.Catalog().Lookup,
	}
}
