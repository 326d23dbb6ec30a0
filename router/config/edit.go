package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
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

// Renamed is c with the settings kept under the old IDs of renamed models moved to their new IDs:
// renamed maps a new ID to the old one (the catalog names a model pulled from the Hugging Face Hub
// ORG/REPO:QUANT, where it was named by its file before). For each rename:
//
//   - the section [models."OLD"] (its variants, aliases and pins with it) becomes
//     [models."NEW"], unless a section for NEW exists: then that one counts and OLD's is left as it
//     is (it names no model any more);
//   - default_model = "OLD" becomes "NEW", and so does draft = "OLD" in any section or variant.
//
// changed says whether anything moved. c is left as it was. The file keeps the old names until
// the configuration is next written (Service.Edit), which writes the new ones.
func (c Config) Renamed(renamed map[string]string) (out Config, changed bool) {
	out = c
	edit := func() { // the first change works on a copy
		if !changed {
			out, changed = c.Clone(), true
		}
	}
	for _, newID := range slices.Sorted(maps.Keys(renamed)) {
		oldID := renamed[newID]
		if oldID == "" || oldID == newID {
			continue
		}
		if _, ok := out.Models[oldID]; ok {
			if _, taken := out.Models[newID]; !taken {
				edit()
				out.Models[newID] = out.Models[oldID]
				delete(out.Models, oldID)
			}
		}
		if out.DefaultModel == oldID {
			edit()
			out.DefaultModel = newID
		}
		for _, id := range slices.Sorted(maps.Keys(out.Models)) {
			if out.Models[id].Draft == oldID {
				edit()
				m := out.Models[id]
				m.Draft = newID
				out.Models[id] = m
			}
			for name, v := range out.Models[id].Variants {
				if v.Draft == oldID {
					edit()
					v.Draft = newID
					out.Models[id].Variants[name] = v
				}
			}
		}
	}
	return out, changed
}
