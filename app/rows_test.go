package app

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/app/platform"
	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/view"
)

func TestModelRows(t *testing.T) {
	at := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	s := windowSnapshot()
	s.Models[0].LastUsed = at.Add(-5 * time.Minute) // broken
	rows := modelRows(s, "", at)
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	if got := strings.Join(ids, ","); got != "qwen-7b,llama-3b,broken,gemma-2b,huge" {
		t.Errorf("row order = %s, want loaded, sleeping, then available by ID", got)
	}
	byID := map[string]rowView{}
	for _, r := range rows {
		byID[r.ID] = r
	}
	more := func(r rowView, label string) button {
		for _, b := range r.More {
			if b.Label == label {
				return b
			}
		}
		t.Fatalf("%s has no %q in its more menu", r.ID, label)
		return button{}
	}
	if b := more(byID["qwen-7b"], "Delete…"); !b.Disabled {
		t.Error("Delete… is enabled for a loaded model")
	}
	if b := more(byID["qwen-7b"], "Force unload"); b.Disabled || b.Action.Action != (Action{Kind: ActForceUnload, Model: "qwen-7b"}) {
		t.Errorf("force unload of a busy model = %+v", b)
	}
	if b := more(byID["gemma-2b"], "Delete…"); b.Disabled || b.Action.File != fileDelete {
		t.Errorf("Delete… of an unloaded model = %+v", b)
	}
	if b := more(byID["gemma-2b"], "Force unload"); !b.Disabled {
		t.Error("Force unload enabled for an unloaded model")
	}
	if r := byID["broken"]; !r.Failed || !strings.Contains(r.Error, "unknown model architecture") || !strings.Contains(r.Detail, "used 5 min ago") {
		t.Errorf("failed row = %+v", r)
	}
	if r := byID["llama-3b"]; r.Buttons[0].Label != "Unload" || r.Buttons[1].Label != "Unpin" {
		t.Errorf("sleeping row buttons = %+v", r.Buttons)
	}

	s.Models[0].State, s.Models[0].NextRetry = service.StateFailed, at.Add(30*time.Second)
	if r := modelRows(s, "broken", at)[0]; !strings.HasSuffix(r.Error, "(automatic retry in 30s)") {
		t.Errorf("failed row with a retry due = %q", r.Error)
	}
	draining := model("d", service.StateLoaded, func(m *Model) { m.Draining = true; m.Active = 3 })
	if r := rowFor(s.Budget, draining, at); r.Buttons[0].Label != "Draining, 3 active" || !r.Buttons[0].Disabled || r.State != "unloading when idle" {
		t.Errorf("draining row = %+v", r)
	}
	loading := model("l", service.StateLoading, nil)
	if r := rowFor(s.Budget, loading, at); !r.Loading || r.Progress != -1 || r.Buttons[0].Label != "Cancel" {
		t.Errorf("loading row without progress = %+v", r)
	}
}

func TestMemorySegments(t *testing.T) {
	b := service.Budget{Limit: 24 * gb, Used: 8 * gb, Measured: 8 * gb, Free: 16 * gb, Reserve: 2 * gb, SystemTotal: 32 * gb, SystemAvailable: 20 * gb}
	held, others, free, reserve, limit := memorySegments(b)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// 32e9 bytes (30 GiB): 8e9 held by models, 32-20-8 = 4 by other programs, 20 available of which 2 reserved.
	if !near(held, 0.25) || !near(others, 0.125) || !near(free, 18.0/32) || !near(reserve, 2.0/32) || !near(limit, 0.75) {
		t.Errorf("segments = %v %v %v %v limit %v", held, others, free, reserve, limit)
	}
	if !near(held+others+free+reserve, 1) {
		t.Errorf("segments do not fill the bar: %v", held+others+free+reserve)
	}
	// Nothing known about the system: the scale is the budget.
	held, others, free, _, limit = memorySegments(service.Budget{Limit: 10 * gb, Used: 5 * gb})
	if !near(held, 0.5) || others != 0 || !near(free, 0.5) || !near(limit, 1) {
		t.Errorf("budget-only segments = %v %v %v limit %v", held, others, free, limit)
	}
	if h, o, f, r, l := memorySegments(service.Budget{}); h+o+f+r+l != 0 {
		t.Error("an empty budget draws something")
	}
	got := memoryLegend(service.Budget{Limit: 24 * gb, Configured: true, Used: 8 * gb, Measured: 5 * gb, Free: 16 * gb, Reserve: gb,
		SystemTotal: 32 * gb, SystemAvailable: 20 * gb, MaxLoaded: 3, Loaded: 2})
	want := "Models reserve 7.5 GiB (4.7 GiB in use) of the budget 22 GiB · 15 GiB free for models · system: 19 GiB available of 30 GiB · reserve 954 MiB · 2 of 3 models loaded"
	if got != want {
		t.Errorf("legend = %q\nwant     %q", got, want)
	}
}

func TestDeleteModel(t *testing.T) {
	dir := t.TempDir()
	trashDir := filepath.Join(dir, "Trash")
	trash := func(p string) error { _, err := platform.TrashInto(trashDir, p, time.Now()); return err }
	for i := 1; i <= 2; i++ {
		writeGGUF(t, filepath.Join(dir, "models", "big-0000"+string(rune('0'+i))+"-of-00002.gguf"), 64)
	}
	path := filepath.Join(dir, "models", "big-00001-of-00002.gguf")
	s := snap(model("big", service.StateLoaded, func(m *Model) { m.Path = path }))
	fb := newFakeBackend(s)

	if err := deleteModel(fb, "big", path, trash); err == nil || !strings.Contains(err.Error(), "unload it before deleting") {
		t.Fatalf("delete of a loaded model: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("refused delete touched the file: %v", err)
	}

	s.Models[0].State = service.StateUnloaded
	fb.setSnapshot(s)
	if err := deleteModel(fb, "big", path, trash); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(filepath.Join(dir, "models"))
	trashed, _ := os.ReadDir(filepath.Join(trashDir, "files"))
	if len(left) != 0 || len(trashed) != 2 {
		t.Errorf("after delete: %d files left, %d in the trash; want 0 and 2", len(left), len(trashed))
	}
	fb.waitCall(t, "rescan")
}

func TestTooBigNamesWhatBoundsTheBudget(t *testing.T) {
	configured := service.Budget{Limit: 8 * gb, Configured: true, ConfiguredLimit: 8 * gb}
	if got := tooBig(9*gb, configured); !strings.Contains(got, "raise memory_limit") {
		t.Errorf("configured limit: %q", got)
	}
	capped := service.Budget{Limit: 6 * gb, Configured: true, ConfiguredLimit: 24 * gb, Reserve: gb}
	if got := tooBig(9*gb, capped); strings.Contains(got, "raise memory_limit") || !strings.Contains(got, "lower memory_reserve") {
		t.Errorf("capped by available memory: %q", got)
	}
	if got := tooBig(9*gb, service.Budget{Limit: 6 * gb, Reserve: gb}); !strings.Contains(got, "close other programs") {
		t.Errorf("automatic budget: %q", got)
	}
}

// A model whose memory need could not be sized from its header says so on its row, rather than
// showing its file size as a need; once measured, the measure is shown and the line goes.
func TestModelRowSaysWhenNotSized(t *testing.T) {
	at := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	v := view.Model{Meta: &catalog.Model{ID: "odd", SizeBytes: 3 << 30, EstimateError: "no memory estimate: unknown architecture \"xyz\""}}
	v.ID, v.State, v.EstimateBytes = "odd", service.StateUnloaded, 3<<30
	m := Model{Model: v}
	r := rowFor(service.Budget{}, m, at)
	if !strings.Contains(r.Unsized, "no memory estimate: unknown architecture") {
		t.Errorf("row's sizing line = %q", r.Unsized)
	}
	if strings.Contains(r.Detail, "needs") {
		t.Errorf("row shows a need it could not size: %q", r.Detail)
	}
	if !strings.Contains(r.Detail, "3.0 GiB file") {
		t.Errorf("row detail = %q", r.Detail)
	}

	m.State, m.MemoryBytes = service.StateLoaded, 4<<30
	if r := rowFor(service.Budget{}, m, at); r.Unsized != "" || !strings.Contains(r.Detail, "4.0 GiB measured") {
		t.Errorf("measured: sizing line %q, detail %q", r.Unsized, r.Detail)
	}
	m.Meta.EstimateError = ""
	m.State, m.MemoryBytes = service.StateUnloaded, 0
	if r := rowFor(service.Budget{}, m, at); r.Unsized != "" || !strings.Contains(r.Detail, "needs ~3.0 GiB") {
		t.Errorf("sized: sizing line %q, detail %q", r.Unsized, r.Detail)
	}
}
