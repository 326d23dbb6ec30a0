package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llamatray/llamatray/router/sched"
)

// Footprints persist RAM and VRAM apart, and the older form (one number) still reads, as RAM.
func TestFootprintsPersistPerDimension(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "footprints.json"), []byte(`{"old": 1048576, "new": {"ram": 1, "vram": 2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := loadFootprints(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.get("old"); got != (sched.Mem{RAM: 1 << 20}) {
		t.Fatalf("old form read as %+v", got)
	}
	if got := f.get("new"); got != (sched.Mem{RAM: 1, VRAM: 2}) {
		t.Fatalf("new form read as %+v", got)
	}
	if _, ok := f.update("new", sched.Mem{RAM: 1, VRAM: 2}); ok {
		t.Fatal("the same footprint was learned again")
	}
	if u, ok := f.update("new", sched.Mem{RAM: 1, VRAM: 100}); !ok || u.fp != (footprint{RAM: 1, VRAM: 100}) {
		t.Fatalf("a larger VRAM need was not learned: %+v %v", u, ok)
	}
	if err := f.save(); err != nil {
		t.Fatal(err)
	}
	g, err := loadFootprints(dir)
	if err != nil || g.get("new") != (sched.Mem{RAM: 1, VRAM: 100}) || g.get("old") != (sched.Mem{RAM: 1 << 20}) {
		t.Fatalf("after save: %+v, %v", g.m, err)
	}
}
