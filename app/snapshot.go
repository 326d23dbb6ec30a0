package app

import (
	"slices"
	"time"

	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/view"
	"github.com/llamatray/llamatray/router/wire"
)

// Snapshot is everything the tray menu and the models window show, copied out of the running
// service at one moment. It is plain data: safe to keep, compare and build menus from.
type Snapshot struct {
	ListenAddr string              // host:port the router serves on (or tried to)
	ListenErr  string              // why the router is not listening, "" while it serves
	Server     service.LlamaServer // llama-server in use: Path "" when none was found, Hint how to install one
	OllamaAddr string              // where Ollama's port is also answered (ollama_port), "" when not
	OllamaErr  string              // why Ollama's port is not answered although ollama_port is on
	ModelDirs  []string
	LogDir     string
	Models     []Model  // sorted by ID
	Skipped    []string // files and settings the last scan could not use, each with the reason
	Budget     service.Budget
	Autostart  bool
	Scanning   bool                // the catalog is being rescanned
	Downloads  []hub.PullStatus    // models being downloaded from the Hub, paused or failed (what came kept), oldest first
	Peers      []wire.Peer         // other machines' servers and their models (Offers.Peers), by name
	Workers    []wire.WorkerStatus // the [workers.NAME] machines (Offers.Workers), by name
	Lending    wire.Lending        // this machine lent to other Llamatrays (Offers.Workers)
	// UpdateVersion is a newer Llamatray release ("0.4.0") found by the daily check (update_check),
	// "" when none; UpdateURL is its page.
	UpdateVersion, UpdateURL string
}

// Model is a model as every surface shows it (view.Model: its engine status, its catalog entry, the
// context size it is started with), and what the app reads from its log.
type Model struct {
	view.Model
	// A failed load: the line of llama-server's output that explains it, what to do, and the fix
	// the row offers (loadcause.go); "" and fixNone when no line explains.
	Cause, CauseDo string
	Fix            loadFix
}

// model finds the model id in s.
func (s Snapshot) model(id string) (Model, bool) {
	i := slices.IndexFunc(s.Models, func(m Model) bool { return m.ID == id })
	if i < 0 {
		return Model{}, false
	}
	return s.Models[i], true
}

// Running reports whether the model has a child process (loading, loaded, sleeping, stopping).
func (m Model) Running() bool { return m.State.Running() }

// Fits reports whether the model can be loaded at all within the budget, with every other model
// unloaded. A model without an estimate is assumed to fit.
func (m Model) Fits(b service.Budget) bool {
	return b.Limit <= 0 || m.EstimateBytes <= b.Limit
}

// NeedsEviction reports whether loading the model would unload others first.
func (m Model) NeedsEviction(b service.Budget) bool {
	return b.Limit > 0 && m.EstimateBytes > b.Free && m.Fits(b)
}

// Held is what the model holds now: measured when running and measured, else expected.
func (m Model) Held() int64 {
	if m.MemoryBytes > 0 {
		return m.MemoryBytes
	}
	return m.EstimateBytes
}

// Group names the three sections of model lists.
type Group int

// The sections of the tray menu and the models window.
const (
	GroupLoaded    Group = iota // loading, loaded, stopping
	GroupSleeping               // sleeping
	GroupAvailable              // unloaded or failed
)

// GroupOf says in which section a model is listed.
func GroupOf(m Model) Group {
	switch m.State {
	case service.StateSleeping:
		return GroupSleeping
	case service.StateLoading, service.StateLoaded, service.StateStopping:
		return GroupLoaded
	default:
		return GroupAvailable
	}
}

// IconState is what the tray icon shows.
type IconState int

// The tray icon states.
const (
	IconIdle    IconState = iota // nothing in flight
	IconServing                  // a request holds a lease
	IconLoading                  // a model is starting
	IconError                    // not listening, no llama-server, or a model failed
)

func (s IconState) String() string {
	return [...]string{"idle", "serving", "loading", "error"}[s]
}

// TrayIcon picks the tray icon for a snapshot. Problems win over activity; a load in progress wins
// over serving, since requests are usually waiting for it.
func TrayIcon(s Snapshot) IconState {
	if s.ListenErr != "" || s.Server.Path == "" {
		return IconError
	}
	loading, serving := false, false
	for _, m := range s.Models {
		switch {
		case m.State == service.StateFailed:
			return IconError
		case m.State == service.StateLoading:
			loading = true
		case m.Active > 0:
			serving = true
		}
	}
	switch {
	case loading:
		return IconLoading
	case serving:
		return IconServing
	}
	return IconIdle
}

// now is the clock used for "last used" labels; tests replace it.
var now = time.Now
