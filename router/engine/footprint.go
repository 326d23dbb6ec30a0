package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/llamatray/llamatray/router/atomicfile"
	"github.com/llamatray/llamatray/router/catalog"
)

// footprints are learned memory footprints, keyed by model file, size and arguments, persisted as JSON
// in the state directory.
type footprints struct {
	path string
	mu   sync.Mutex // guards m; save does its file I/O after copying m, outside mu
	m    map[string]footprint
}

// footprint is what one run of a model held at its peak: RAM, and memory on each GPU device by
// llama-server's name for it (from the child's own buffer report), each kept apart: VRAM booked as
// RAM would let two models that each fill the GPU start side by side. VRAM is the devices' sum, kept
// for files written before devices were; a footprint with VRAM but no devices is split over the
// machine's devices as an estimate is.
type footprint struct {
	RAM     int64            `json:"ram"`
	VRAM    int64            `json:"vram,omitempty"`
	Devices map[string]int64 `json:"devices,omitempty"`
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

func (f footprint) zero() bool { return f.RAM == 0 && f.VRAM == 0 && len(f.Devices) == 0 }

type footprintUpdate struct {
	key string
	fp  footprint
}

// footprintKey is what a learned footprint is kept under: the model's file (path and size) and
// the arguments of its child that bear on memory (ctx size, GPU layers, KV cache type, slots, flash
// attention, projector and every argument not known to leave memory alone). Not its ID: two IDs
// of one file run the same way — a model and its variants, or two variants — share one footprint,
// and a variant with another context has its own.
func footprintKey(cm catalog.Model, args []string) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("footprint/2\x00%s\x00%d\x00%s", cm.Path, cm.SizeBytes, strings.Join(memoryArgs(args), "\x00"))))
	return hex.EncodeToString(h[:16])
}

// legacyFootprintKey is the key footprints were kept under before: every argument, the model's
// --alias (its ID) included. Footprints learned then are found by it once and kept under the new key.
// A model named by its Hub name since had its file-name ID (catalog.Model.FileID) as --alias then.
func legacyFootprintKey(cm catalog.Model, args []string) string {
	if cm.FileID != "" {
		args = slices.Clone(args)
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "--alias" {
				args[i+1] = cm.FileID
			}
		}
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s", cm.Path, cm.SizeBytes, strings.Join(args, "\x00"))))
	return hex.EncodeToString(h[:16])
}

// memoryNeutral are llama-server flags that change nothing of what a child holds in memory, with
// whether each takes a value: names, sampling defaults, chat templates, timers, the HTTP side.
var memoryNeutral = map[string]bool{
	"--alias": true, "-a": true, "--sleep-idle-seconds": true,
	"--temp": true, "--temperature": true, "--top-k": true, "--top-p": true, "--min-p": true,
	"--seed": true, "-s": true, "--repeat-penalty": true,
	"--chat-template": true, "--chat-template-file": true, "--chat-template-kwargs": true,
	"--reasoning-format": true, "--reasoning-budget": true, "--reasoning-budget-message": true,
	"--timeout": true, "-to": true, "--threads-http": true, "--api-key": true, "--api-key-file": true,
	"--jinja": false, "--no-jinja": false, "--metrics": false, "--props": false, "--slots": false,
	"--no-slots": false, "--verbose": false, "-v": false, "--log-verbose": false,
}

// memoryArgs is args without the memory-neutral flags (and their values), in order: the last of
// a repeated flag is still the one that counts.
func memoryArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		name, _, inline := strings.Cut(args[i], "=")
		takesValue, neutral := memoryNeutral[name]
		switch {
		case !neutral:
			out = append(out, args[i])
		case takesValue && !inline:
			i++ // its value
		}
	}
	return out
}

// shareLearned gives a footprint m just learned to every other model whose next load has the same
// key (another ID of the same file, run the same way). Called with mu held.
func (e *Engine) shareLearned(m *model, u footprintUpdate) {
	for _, o := range e.models {
		if o != m && o.entry.Path == m.entry.Path && footprintKey(o.entry, e.args(o)) == u.key {
			o.learned = u.fp.clone()
		}
	}
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

// lookup is the footprint learned under key or, when none is, under the legacy key, which is then
// copied to key (written with the next save; the legacy entry stays for an older version).
func (f *footprints) lookup(key, legacy string) footprint {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fp, ok := f.m[key]; ok {
		return fp.clone()
	}
	fp, ok := f.m[legacy]
	if !ok {
		return footprint{}
	}
	f.m[key] = fp.clone()
	return fp.clone()
}

func (f footprint) clone() footprint {
	f.Devices = maps.Clone(f.Devices) // nil stays nil
	return f
}

// update records a measurement when it is new or, in RAM or on any device, at least 5% above what
// was learned; it keeps the larger of the two in each. It returns what is learned now.
func (f *footprints) update(key string, m footprint) (footprintUpdate, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, ok := f.m[key]
	above := func(n, was int64) bool { return n > was+was/20 }
	grew := !ok || above(m.RAM, old.RAM) || (len(m.Devices) == 0 && above(m.VRAM, old.VRAM))
	for d, n := range m.Devices {
		grew = grew || above(n, old.Devices[d])
	}
	if !grew {
		return footprintUpdate{}, false
	}
	fp := footprint{RAM: max(m.RAM, old.RAM)}
	if len(m.Devices) > 0 || len(old.Devices) > 0 {
		fp.Devices = maps.Clone(old.Devices)
		if fp.Devices == nil {
			fp.Devices = map[string]int64{}
		}
		for d, n := range m.Devices {
			fp.Devices[d] = max(n, fp.Devices[d])
		}
		for _, n := range fp.Devices {
			fp.VRAM += n
		}
	} else {
		fp.VRAM = max(m.VRAM, old.VRAM)
	}
	f.m[key] = fp
	return footprintUpdate{key, fp.clone()}, true
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
	if err := atomicfile.Write(f.path, b, 0o644); err != nil {
		return fmt.Errorf("writing footprints: %w", err)
	}
	return nil
}
