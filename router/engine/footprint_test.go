package engine

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// Footprints persist RAM and each device apart; the older forms (one number; RAM and a VRAM sum)
// still read.
func TestFootprintsPersistPerDevice(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "footprints.json"), []byte(`{"old": 1048576, "sum": {"ram": 1, "vram": 2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := loadFootprints(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.get("old"); got.RAM != 1<<20 || got.VRAM != 0 || got.Devices != nil {
		t.Fatalf("old form read as %+v", got)
	}
	if got := f.get("sum"); got.RAM != 1 || got.VRAM != 2 || got.Devices != nil {
		t.Fatalf("sum form read as %+v", got)
	}
	if _, ok := f.update("sum", footprint{RAM: 1, VRAM: 2}); ok {
		t.Fatal("the same footprint was learned again")
	}
	if u, ok := f.update("sum", footprint{RAM: 1, Devices: map[string]int64{"CUDA0": 60, "CUDA1": 40}}); !ok || u.fp.VRAM != 100 || u.fp.Devices["CUDA1"] != 40 {
		t.Fatalf("a per-device footprint was not learned: %+v %v", u, ok)
	}
	if _, ok := f.update("sum", footprint{RAM: 1, Devices: map[string]int64{"CUDA0": 61}}); ok {
		t.Fatal("a footprint within 5% on every device was learned again")
	}
	if u, ok := f.update("sum", footprint{RAM: 1, Devices: map[string]int64{"CUDA1": 80}}); !ok || u.fp.Devices["CUDA0"] != 60 || u.fp.Devices["CUDA1"] != 80 || u.fp.VRAM != 140 {
		t.Fatalf("one device's growth: %+v %v", u, ok)
	}
	if err := f.save(); err != nil {
		t.Fatal(err)
	}
	g, err := loadFootprints(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.get("sum"); got.RAM != 1 || got.VRAM != 140 || !maps.Equal(got.Devices, map[string]int64{"CUDA0": 60, "CUDA1": 80}) {
		t.Fatalf("after save: %+v", got)
	}
	if g.get("old").RAM != 1<<20 {
		t.Fatalf("after save, old: %+v", g.get("old"))
	}
}
