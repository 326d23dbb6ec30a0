package engine

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
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

// Footprints are kept by file and memory-relevant settings, not by model ID: a model and a variant
// that differ only in a sampling flag share what one of them learned (at once, and after a
// restart); a variant with another context has its own. A footprint learned under the older key
// (which held the ID) is still found.
func TestFootprintsSharedPerSetting(t *testing.T) {
	dir := t.TempDir()
	start := func() *syncEngine {
		s := newSync(t, func(o *Options) { o.StateDir, o.MemoryLimit = dir, 0 },
			syncModel{id: "tiny", ramMiB: 10, settings: Settings{CtxSize: 512, Args: []string{"--temp", "0.5", "-np", "1"}}},
			syncModel{id: "tiny@same", ramMiB: 10, settings: Settings{CtxSize: 512, Args: []string{"--temp=0.9", "-np", "1", "--jinja"}, IdleSleep: time.Minute}},
			syncModel{id: "tiny@big", ramMiB: 40, settings: Settings{CtxSize: 2048, Args: []string{"-np", "1"}}})
		cat := s.e.o.Catalog.(*memCatalog)
		cat.mu.Lock()
		for i := range cat.models { // one file
			cat.models[i].Path, cat.models[i].Files = "/models/tiny.gguf", []string{"/models/tiny.gguf"}
		}
		cat.mu.Unlock()
		s.e.SyncCatalog()
		return s
	}
	s := start()
	p := s.load("tiny")
	s.probe.set(func(fp *fakeProbe) { fp.rss[p.pid] = 25 * mib })
	s.e.sample(t.Context())
	if got := s.state("tiny").LearnedBytes; got != 25*mib {
		t.Fatalf("tiny learned %d MiB, want 25", got>>20)
	}
	if got := s.state("tiny@same").LearnedBytes; got != 25*mib {
		t.Fatalf("tiny@same (same file, same memory settings) has %d MiB learned, want tiny's 25", got>>20)
	}
	if got := s.state("tiny@big"); got.LearnedBytes != 0 || got.EstimateBytes != 40*mib {
		t.Fatalf("tiny@big (another context) learned %d MiB and needs %d, want nothing learned and its own estimate", got.LearnedBytes>>20, got.EstimateBytes>>20)
	}

	r := start() // a restart reads the persisted footprints
	if got := r.state("tiny@same").LearnedBytes; got != 25*mib {
		t.Fatalf("after a restart tiny@same has %d MiB learned, want 25", got>>20)
	}
	if got := r.state("tiny@big").LearnedBytes; got != 0 {
		t.Fatalf("after a restart tiny@big has %d MiB learned", got>>20)
	}

	// The older key of tiny@big: every argument, its --alias included.
	r.e.mu.Lock()
	m := r.e.models["tiny@big"]
	legacy := legacyFootprintKey(m.entry, r.e.args(m))
	r.e.mu.Unlock()
	if err := os.WriteFile(filepath.Join(dir, "footprints.json"), []byte(`{"`+legacy+`": {"ram": 77}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := start().state("tiny@big").LearnedBytes; got != 77 {
		t.Fatalf("a footprint under the older key read as %d bytes, want 77", got)
	}
}

// A model named ORG/REPO:QUANT since finds what was learned when --alias was its file-name ID.
func TestLegacyFootprintKeyOfARenamedModel(t *testing.T) {
	args := func(alias string) []string {
		return []string{"-m", "/hub/tiny-Q8_0.gguf", "--alias", alias, "-c", "512"}
	}
	renamed := catalog.Model{ID: "Org/Tiny-GGUF:Q8_0", FileID: "tiny-Q8_0", Path: "/hub/tiny-Q8_0.gguf", SizeBytes: 42}
	before := catalog.Model{ID: "tiny-Q8_0", Path: renamed.Path, SizeBytes: 42}
	if legacyFootprintKey(renamed, args(renamed.ID)) != legacyFootprintKey(before, args(before.ID)) {
		t.Error("the older key of a renamed model is not the one it had under its file name")
	}
	if legacyFootprintKey(before, args("other")) == legacyFootprintKey(before, args(before.ID)) {
		t.Error("the older key does not depend on --alias")
	}
}

// memoryArgs leaves out the flags that do not change memory, with their values.
func TestMemoryArgs(t *testing.T) {
	got := memoryArgs([]string{"-m", "/m.gguf", "--alias", "x@y", "-c", "512", "--sleep-idle-seconds", "60", "--temp", "0.2",
		"--jinja", "-ngl", "99", "--top-k=5", "-ctk", "q8_0", "--seed", "1", "-fa", "on", "-b", "256"})
	want := []string{"-m", "/m.gguf", "-c", "512", "-ngl", "99", "-ctk", "q8_0", "-fa", "on", "-b", "256"}
	if !slices.Equal(got, want) {
		t.Fatalf("memoryArgs = %v, want %v", got, want)
	}
}

// An embedding model (its GGUF pools) is started with --embeddings, once, whatever its own args say.
func TestEmbeddingModelArgs(t *testing.T) {
	e := &Engine{}
	emb := &model{id: "e", entry: catalog.Model{Path: "/e.gguf", Pooling: true}}
	if got := e.args(emb); !slices.Contains(got, "--embeddings") {
		t.Errorf("args %v", got)
	}
	emb.set.Args = []string{"--embedding", "--pooling", "mean"}
	if got := strings.Join(e.args(emb), " "); strings.Count(got, "--embedding") != 1 {
		t.Errorf("args %s", got)
	}
	if got := e.args(&model{id: "c", entry: catalog.Model{Path: "/c.gguf"}}); slices.Contains(got, "--embeddings") {
		t.Errorf("a chat model got %v", got)
	}
	rr := &model{id: "r", entry: catalog.Model{Path: "/r.gguf", Pooling: true, Rerank: true}}
	if got := strings.Join(e.args(rr), " "); !strings.Contains(got, "--reranking") || strings.Contains(got, "--embeddings") {
		t.Errorf("a reranker got %s, want --reranking alone", got)
	}
	rr.set.Args = []string{"--rerank"}
	if got := strings.Join(e.args(rr), " "); strings.Contains(got, "--reranking") {
		t.Errorf("a reranker whose args ask for it got %s", got)
	}
}
