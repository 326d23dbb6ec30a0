package app

import (
	"context"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/service"
)

// Backend is what the tray and the windows drive: the running service, or a fake in tests. Methods
// may block (Unload waits for a drain); the UI calls them off the UI thread.
type Backend interface {
	// Snapshot copies the current state: listener, llama-server, models, budget.
	Snapshot() Snapshot
	// Subscribe delivers engine and catalog changes until cancel is called.
	Subscribe() (events <-chan service.Event, cancel func())
	// Load starts loading a model and returns at once.
	Load(name string) error
	// Unload stops a model: after in-flight requests finish, or at once when force is set.
	Unload(ctx context.Context, name string, force bool) error
	// SetPinned pins or unpins a model and keeps the choice in the config file.
	SetPinned(name string, pinned bool) error
	// Logs returns the tail of a model's llama-server output.
	Logs(name string) []string
	// Config returns the configuration in effect.
	Config() config.Config
	// EditConfig changes the configuration: change runs on a copy of the configuration in force
	// when the edit is made (not when a window read it), and the result is validated, saved to the
	// config file and applied live; when change fails or the result does not validate, nothing
	// changes. The app never writes the file itself, so a pin made meanwhile is kept.
	EditConfig(change func(*config.Config) error) error
	// Rescan looks for model files again.
	Rescan(ctx context.Context) error
	// ModelsDir is Llamatray's own model folder, where added models go.
	ModelsDir() (string, error)
}
