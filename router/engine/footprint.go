package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/sched"
)

// footprints are learned memory footprints, keyed by model file, size and arguments, persisted as JSON
// in the state directory.
type footprints struct {
	path string
	mu   sync.Mutex // guards m; save does its file I/O after copying m, outside mu
	m    map[string]footprint
}

// footprint is what one run of a model held at its peak, in RAM and in VRAM, each kept apart: VRAM
// booked as RAM would let two models that each fill the GPU start side by side.
type footprint struct {
	RAM  int64 `json:"ram"`
	VRAM int64 `json:"vram,omitempty"`
}

// UnmarshalJSON also reads the older form, one number of bytes, as RAM.
func (f *footprint) UnmarshalJSON(b []byte) error {
	var n int64
	if err := json.Unmarshal(b, &n); err == nil {
		*f = footprint{RAM: n}
		return nil
	}
	type plain footprint
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("footprint %s: %w", b, err)
	}
	*f = footprint(p)
	return nil
}

func (f footprint) mem() sched.Mem { return sched.Mem{RAM: f.RAM, VRAM: f.VRAM} }

type footprintUpdate struct {
	key string
	fp  footprint
}

func footprintKey(cm catalog.Model, args []string) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s", cm.Path, cm.SizeBytes, strings.Join(args, "\x00"))))
	return hex.EncodeToString(h[:16])
}

func loadFootprints(dir string) (*footprints, error) {
	f := &footprints{m: map[string]footprint{}}
	if dir == "" {
		return f, nil
	}
	f.path = filepath.Join(dir, "footprints.json")
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("reading %s: %w", f.path, err)
	}
	if err := json.Unmarshal(b, &f.m); err != nil {
		f.m = map[string]footprint{}
		return f, fmt.Errorf("parsing %s: %w", f.path, err)
	}
	return f, nil
}

func (f *footprints) get(key string) sched.Mem {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[key].mem()
}

// update records a measurement when it is new or, in RAM or in VRAM, at least 5% above what was
// learned; it keeps the larger of the two in each. It returns what is learned now.
func (f *footprints) update(key string, m sched.Mem) (footprintUpdate, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, ok := f.m[key]
	above := func(n, was int64) bool { return n > was+was/20 }
	if ok && !above(m.RAM, old.RAM) && !above(m.VRAM, old.VRAM) {
		return footprintUpdate{}, false
	}
	fp := footprint{RAM: max(m.RAM, old.RAM), VRAM: max(m.VRAM, old.VRAM)}
	f.m[key] = fp
	return footprintUpdate{key, fp}, true
}

// save writes the footprints atomically.
func (f *footprints) save() error {
	if f.path == "" {
		return nil
	}
	f.mu.Lock()
	b, err := json.MarshalIndent(f.m, "", "  ")
	f.mu.Unlock()
	if err != nil {
		return fmt.Errorf("encoding footprints: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return fmt.Errorf("creating state dir: %w", err)
	}
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("writing footprints: %w", err)
	}
	if err := os.Rename(tmp, f.path); err != nil {
		return fmt.Errorf("replacing footprints: %w", err)
	}
	return nil
}
