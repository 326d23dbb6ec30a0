package view

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/engine"
)

type engineStub []engine.ModelStatus

func (e engineStub) Models() []engine.ModelStatus { return e }
func (e engineStub) Model(name string) (engine.ModelStatus, error) {
	for _, st := range e {
		if st.ID == name {
			return st, nil
		}
	}
	return engine.ModelStatus{}, &engine.UnknownModelError{Name: name}
}

type listing []catalog.Model

func (c listing) Lookup(name string) (catalog.Model, bool) {
	for _, m := range c {
		if m.ID == name {
			return m, true
		}
	}
	return catalog.Model{}, false
}
func (c listing) Models() []catalog.Model { return c }

// lookupOnly is a catalog that cannot list.
type lookupOnly struct{ listing }

func (c lookupOnly) Models() {}

func TestBuilderJoins(t *testing.T) {
	mod := time.Unix(1700000000, 0)
	cat := listing{
		{ID: "a", Path: "/m/a.gguf", Aliases: []string{"fast"}, ContextLength: 8192, SizeBytes: 100, ModTime: mod,
			Estimate: catalog.Estimate{RAM: 300, VRAM: 200}},
		{ID: "b", Path: "/m/b.gguf", ContextLength: 4096, SizeBytes: 70},                                     // not in the engine yet
		{ID: "c", Path: "/m/c.gguf", ContextLength: 2048, Estimate: catalog.Estimate{RAM: 40}, SizeBytes: 9}, // not in the engine yet
	}
	eng := engineStub{
		{ID: "a", State: engine.StateLoaded, EstimateBytes: 450, PID: 7},
		{ID: "gone", State: engine.StateFailed, Error: "crashed"},
	}
	b := Builder{Engine: eng, Catalog: cat, CtxSize: func(id string) int {
		if id == "a" {
			return 1024
		}
		return 0
	}}
	ms := b.Models()
	if len(ms) != 4 || ms[0].ID != "a" || ms[1].ID != "b" || ms[2].ID != "c" || ms[3].ID != "gone" {
		t.Fatalf("%+v", ms)
	}
	a, pb, pc, gone := ms[0], ms[1], ms[2], ms[3]
	if a.Meta == nil || a.Path != "/m/a.gguf" || a.Aliases[0] != "fast" || a.CtxSize != 1024 || a.EstimateBytes != 450 || a.PID != 7 {
		t.Fatalf("a: %+v", a)
	}
	if pb.State != engine.StateUnloaded || pb.EstimateBytes != 70 || pb.CtxSize != 4096 || pb.Meta == nil {
		t.Fatalf("b, no estimate: %+v", pb)
	}
	if pc.EstimateBytes != 40 || pc.CtxSize != 2048 {
		t.Fatalf("c: %+v", pc)
	}
	if gone.Meta != nil || gone.CtxSize != 0 || gone.Error != "crashed" {
		t.Fatalf("gone: %+v", gone)
	}
	// A catalog that cannot list adds no pending entries; Model reads one.
	if ms := (Builder{Engine: eng, Catalog: lookupOnly{cat}}).Models(); len(ms) != 2 {
		t.Fatalf("%+v", ms)
	}
	if m, err := b.Model("a"); err != nil || m.CtxSize != 1024 || m.Meta == nil {
		t.Fatalf("%+v %v", m, err)
	}
	if _, err := b.Model("nope"); err == nil {
		t.Fatal("unknown model found")
	}
}

func TestWire(t *testing.T) {
	started := time.Unix(1600000000, 0)
	ms := Builder{Engine: engineStub{{ID: "a", State: engine.StateLoaded, EstimateBytes: 450, LastUsed: time.Unix(1e9, 0)}, {ID: "gone"}},
		Catalog: listing{{ID: "a", Architecture: "qwen2", ModTime: time.Unix(1700000000, 0), Splits: 1}}}.Models()
	l := List(ms, started)
	if l.Object != "list" || len(l.Data) != 2 {
		t.Fatalf("%+v", l)
	}
	a, gone := l.Data[0], l.Data[1]
	if a.Created != 1700000000 || a.Meta == nil || a.Meta.Architecture != "qwen2" || a.Status.MemoryEstimateBytes != 450 ||
		a.Status.LastUsed == nil || !a.Status.LastUsed.Equal(time.Unix(1e9, 0)) || a.Status.Value != "loaded" {
		t.Fatalf("a: %+v", a)
	}
	b, _ := json.Marshal(gone)
	want := `{"id":"gone","object":"model","owned_by":"llamatray","created":1600000000,"aliases":[],"status":{"value":"","active_requests":0,"queued":0,"memory_bytes":0,"memory_estimate_bytes":0,"last_used":null,"pid":0,"port":0,"socket":"","exit_code":null,"pinned":false,"draining":false,"error":"","next_retry":null,"unload_at":null,"progress":0,"args":[],"wait":null},"meta":null,"tags":[],"architecture":{"input_modalities":["text"],"output_modalities":["text"]},"context_length":0}`
	if string(b) != want {
		t.Fatalf("%s", b)
	}
}

// A model's aliases are listed as llama.cpp's router lists them: sorted, once each, without its
// ID; its names in an Ollama store are among them. Its tags are the configured ones, sorted.
func TestWireNamesAndTags(t *testing.T) {
	b := Builder{Engine: engineStub{{ID: "llama3.2:3b", Aliases: []string{"zed", "b", "llama3.2:3b", "b"}}},
		Catalog: listing{{ID: "llama3.2:3b", Ollama: []catalog.OllamaName{{Name: "llama3.2:3b"}, {Name: "llama3.2:latest"}}}},
		Tags:    func(string) []string { return []string{"tiny", "chat"} }}
	e := b.Models()[0].Wire(time.Unix(0, 0))
	if !slices.Equal(e.Aliases, []string{"b", "llama3.2:latest", "zed"}) || !slices.Equal(e.Tags, []string{"chat", "tiny"}) {
		t.Fatalf("aliases %q tags %q", e.Aliases, e.Tags)
	}
}
