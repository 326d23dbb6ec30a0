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
)

// footprints are learned memory footprints, keyed by model file, size and arguments, persisted as JSON
// in the state directory.
type footprints struct {
	path string
	mu   sync.Mutex // guards m; save does its file I/O after copying m, outside mu
	m    map[string]int64
}

type footprintUpdate struct {
	key   string
	bytes int64
}

func footprintKey(cm catalog.Model, args []string) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s", cm.Path, cm.SizeBytes, strings.Join(args, "\x00"))))
	return hex.EncodeToString(h[:16])
}

func loadFootprints(dir string) (*footprints, error) {
	f := &footprints{m: map[string]int64{}}
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
		f.m = map[string]int64{}
		return f, fmt.Errorf("parsing %s: %w", f.path, err)
	}
	return f, nil
}

func (f *footprints) get(key string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[key]
}

// update records a measurement when it is new or at least 5% above what was learned.
func (f *footprints) update(key string, bytes int64) (footprintUpdate, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.m[key]
	if old > 0 && bytes <= old+old/20 {
		return footprintUpdate{}, false
	}
	f.m[key] = bytes
	return footprintUpdate{key, bytes}, true
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
