package app

import (
	"context"
	"errors"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/fit"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/wire"
)

// Backend is the one seam between the app and the service: everything the tray and the windows
// drive, in the service's terms (serviceBackend is the running service; tests use fakes). Nothing in
// the app asks a backend for more than this interface. A part a backend does not have (a test's fake
// has no Hub, for one) is said by Offers, and its methods answer ErrNotOffered or an empty result.
// Methods may block (Unload waits for a drain); the UI calls them off the UI thread.
type Backend interface {
	// Offers says which of the service's parts this backend has; the UI shows no button for the others.
	Offers() Offers

	// Snapshot copies the current state: listener, llama-server, models, budget, downloads.
	Snapshot() Snapshot
	// Subscribe delivers the service's model and catalog events until cancel is called.
	Subscribe() (events <-chan service.Event, cancel func())
	// Load starts loading a model and returns at once.
	Load(name string) error
	// Unload stops a model: after in-flight requests finish, or at once when force is set.
	Unload(ctx context.Context, name string, force bool) error
	// SetPinned pins or unpins a model and keeps the choice in the config file.
	SetPinned(name string, pinned bool) error
	// Logs returns the tail of a model's llama-server output.
	Logs(name string) []string
	// Activity is the record of the last hour, as GET /api/activity serves it (Offers.Activity).
	Activity() wire.Activity
	// UpdateChanged is closed when the next check of Llamatray's releases ends; nil when the
	// backend makes none.
	UpdateChanged() <-chan struct{}

	// Config returns the configuration in effect.
	Config() config.Config
	// EditConfig changes the configuration: change runs on a copy of the configuration in force
	// when the edit is made (not when a window read it), and the result is validated, saved to the
	// config file and applied live; when change fails or the result does not validate, nothing
	// changes. The app never writes the file itself, so a pin made meanwhile is kept.
	EditConfig(change func(*config.Config) error) error
	// Rescan looks for model files again.
	Rescan(ctx context.Context) error
	// FindLlamaServer looks for llama-server again (one installed while Llamatray runs) and says
	// where it is now, "" when still none: the next load uses it, with no restart.
	FindLlamaServer() string
	// ModelsDir is Llamatray's own model folder, where added models go.
	ModelsDir() (string, error)
	// EstimateWith returns the memory a model needs with settings not applied yet, whether it was
	// measured in an earlier load, and the room now (Offers.EstimateWith).
	EstimateWith(id string, cfg config.Config) (need int64, learned bool, room fit.Room, err error)
	// LlamaServerFlags lists the flags of the llama-server in use (from its --help).
	LlamaServerFlags(ctx context.Context) ([]string, error)
	// DraftCandidates lists the models that can draft for a model (their vocabulary matches) and,
	// for every other model, why not; none without a catalog to compare.
	DraftCandidates(id string) (ok []string, refused map[string]string, err error)

	// PlanBuild says which archive of a llama.cpp release would be installed here, and why, and
	// the others (Offers.InstallBuild).
	PlanBuild(ctx context.Context, req releases.Request) (releases.Release, releases.Choice, error)
	// InstallBuild downloads, verifies and unpacks llama.cpp's build for this machine and makes the
	// service use it; progress is called off the UI thread.
	InstallBuild(ctx context.Context, req releases.Request, progress func(releases.Progress)) (releases.Build, error)

	// The Hugging Face Hub (Offers.Hub): search, a repo's quants with fit badges, pulls with their
	// progress, pulled models and the token.

	// SearchHub searches the Hub for GGUF repos.
	SearchHub(ctx context.Context, text string) ([]hub.Repo, error)
	// HubQuants lists a repo's quants with fit badges.
	HubQuants(ctx context.Context, repo string) ([]hub.QuantFit, error)
	// HubStarters is the short list of models suggested before a search, those the Hub still
	// has, with fit badges.
	HubStarters(ctx context.Context) ([]hub.StarterFit, error)
	// Pull starts downloading ORG/REPO:QUANT (or a pasted Hub address) and returns at once.
	Pull(ctx context.Context, name string) (hub.PullStatus, error)
	// CancelPull stops a running pull; what it wrote is removed.
	CancelPull(name string) bool
	// PausePull stops a running pull, keeping what came for a resume.
	PausePull(name string) bool
	// ResumePull goes on with a paused or failed pull, from what came (after a restart too).
	ResumePull(ctx context.Context, name string) error
	// DiscardPull stops a pull and deletes what it left on disk.
	DiscardPull(name string) error
	// PullEvents delivers pull progress until cancel is called; a nil channel without a Hub.
	PullEvents() (events <-chan hub.Event, cancel func())
	// Pulled tells a model pulled from the Hub (and the ORG/REPO:QUANT it was pulled as) from a
	// user's own file.
	Pulled(id string) (name string, ok bool)
	// RemovePulled deletes a pulled model's files from the Hub cache, as `llamatray rm` does: its
	// snapshot links and the blobs no other snapshot uses. It returns the paths removed.
	RemovePulled(id string) ([]string, error)
	// HubTokenSource says where the Hub token in use comes from, "" when there is none.
	HubTokenSource() string
	// SaveHubToken keeps token ("" removes it) where the Hub's own tools read it ($HF_HOME/token)
	// and uses it from the next request on; it returns the file's path.
	SaveHubToken(token string) (string, error)

	// Other machines (Offers.Peers): peers whose models are served here too ([peers.NAME]).

	// The peers themselves, with their state and models, are in the Snapshot.

	// AddPeer adds a peer, or changes the one of its name, saved in the configuration; it is read
	// at once. RemovePeer takes one out.
	AddPeer(p wire.PeerAdd) error
	RemovePeer(name string) error
	// PeersChanged is closed at the next change of a peer's state or models; nil without peers.
	PeersChanged() <-chan struct{}
	// Discovered lists the other Llamatrays found on the local network that are not peers yet;
	// none when the backend does not look.
	Discovered() []wire.Discovered

	// Workers (Offers.Workers): the [workers.NAME] machines models are spread over, and this
	// machine lent to others. Their state is in the Snapshot.

	// SetLending turns "Lend this machine" on or off (config lend), saved and applied.
	SetLending(on bool) error
	// LendConfigLines are the lines a head adds to use this machine: its [workers.NAME] section
	// with the address and the pairing token.
	LendConfigLines() (string, error)
	// NewLendToken replaces the pairing token; heads given the old one are refused.
	NewLendToken() error
}

// Offers are the parts of the service a backend has. The running service has them all.
type Offers struct {
	Hub          bool // models from the Hugging Face Hub: Get models, Downloads, the token, removing a pull
	Activity     bool // the record of the last hour: the Activity window
	InstallBuild bool // installing llama.cpp's build: the Install llama-server button
	EstimateWith bool // estimates for settings not applied yet: the settings window's memory line
	Peers        bool // other machines' servers: the models window's Other machines section
	Workers      bool // workers and lending this machine: their part of Other machines, the tray's Lend this machine
}

// ErrNotOffered is the answer of a method whose part the backend does not have (see Offers).
var ErrNotOffered = errors.New("not offered by this backend")
