package config

import (
	"errors"
	"fmt"
	"sync"

	"github.com/llamatray/llamatray/router/atomicfile"
)

// ErrUnchanged is returned by a change that finds the configuration already as it wants it: Edit
// then saves and commits nothing, and returns nil.
var ErrUnchanged = errors.New("configuration unchanged")

// Writer is the one writer of a configuration file. The service's changes (a window's save, a pin,
// an alias) and the CLI's changes when no instance runs (peer add, peer rm) each go through Edit,
// under one lock: a mutex in this process, and the lock of <Path>.lock against other processes, so
// that no change made meanwhile is dropped by a save of an older copy.
type Writer struct {
	Path string     // the configuration file; "" → nothing is saved (changes still take turns)
	mu   sync.Mutex // guards the file (each read-change-write of it); held across its I/O
}

// Edit runs change, under the lock, on a copy (Clone) of the configuration from gives (the one in
// force: the service's in memory, the file's for the CLI), validates the result and hands the old
// and new configurations to commit, which saves (Save) and puts in force in the order its caller
// needs. When change or the validation fails nothing is committed and the error says why.
func (w *Writer) Edit(from func() (Config, error), change func(*Config) error, commit func(old, cfg Config) error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.Path != "" {
		f, err := atomicfile.Lock(w.Path + ".lock")
		if err != nil {
			return fmt.Errorf("config: locking %s: %w", w.Path, err)
		}
		defer f.Close() // releases the lock
	}
	old, err := from()
	if err != nil {
		return err
	}
	cfg := old.Clone()
	if err := change(&cfg); errors.Is(err, ErrUnchanged) {
		return nil
	} else if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	return commit(old, cfg)
}

// Save writes cfg to Path, when there is one. Call it from Edit's commit, under the lock.
func (w *Writer) Save(cfg Config) error {
	if w.Path == "" {
		return nil
	}
	if err := cfg.Save(w.Path); err != nil {
		return fmt.Errorf("saving the configuration: %w", err)
	}
	return nil
}
