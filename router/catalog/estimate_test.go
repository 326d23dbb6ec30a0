package catalog

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// paramsTable is a concurrency-safe Options.Params for tests.
type paramsTable struct {
	mu sync.Mutex // guards m
	m  map[string]EstimateParams
}

func (p *paramsTable) set(id string, e EstimateParams) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[id] = e
}

func (p *paramsTable) get(id string) EstimateParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.m[id]; ok {
		return e
	}
	return EstimateParams{ContextSize: 4096}
}

func TestEstimate(t *testing.T) {
	root := t.TempDir()
	opts := ggufwrite.HeaderOptions{Blocks: 8, Embedding: 512, FFN: 1024, Heads: 8, FileType: 1, ContextLength: 32768}
	writeModel(t, filepath.Join(root, "plain", "m.gguf"), opts)
	writeModel(t, filepath.Join(root, "vision", "v.gguf"), opts)
	writeProjector(t, filepath.Join(root, "vision", "mmproj-v.gguf"), 256)
	params := &paramsTable{m: map[string]EstimateParams{}}
	c, _ := newCatalog(t, Options{Dirs: []string{root}, Params: params.get})
	rescan := func() {
		t.Helper()
		if err := c.Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	get := func(id string) Estimate {
		t.Helper()
		m, ok := c.Lookup(id)
		if !ok {
			t.Fatalf("%s not found", id)
		}
		return m.Estimate
	}

	base := get("m")
	if base.RAM <= 0 || base.ContextSize != 4096 || base.GPULayers != 0 {
		t.Fatalf("CPU estimate at 4096: %+v", base)
	}
	if m, _ := c.Lookup("m"); base.RAM < m.SizeBytes/2 {
		t.Errorf("CPU-only RAM %d does not cover the weights (%d bytes of file)", base.RAM, m.SizeBytes)
	}

	prev := base
	for _, ctx := range []int{8192, 16384, 32768} {
		params.set("m", EstimateParams{ContextSize: ctx})
		rescan()
		e := get("m")
		if e.ContextSize != ctx || e.RAM <= prev.RAM {
			t.Errorf("ctx %d: %+v, want more RAM than %+v", ctx, e, prev)
		}
		prev = e
	}

	params.set("m", EstimateParams{ContextSize: 0})
	rescan()
	if e := get("m"); e.ContextSize != 32768 {
		t.Errorf("context 0 estimated for %d, want the trained 32768", e.ContextSize)
	}

	params.set("m", EstimateParams{ContextSize: 4096, GPULayers: -1})
	rescan()
	gpu := get("m")
	if gpu.GPULayers != opts.Blocks+1 || gpu.VRAM <= base.VRAM || gpu.RAM >= base.RAM {
		t.Errorf("full offload %+v vs CPU %+v: want all layers, more VRAM, less RAM", gpu, base)
	}
	params.set("m", EstimateParams{ContextSize: 4096, GPULayers: 3})
	rescan()
	if e := get("m"); e.GPULayers != 3 || e.VRAM <= base.VRAM || e.VRAM >= gpu.VRAM {
		t.Errorf("3 layers offloaded: %+v", e)
	}

	params.set("m", EstimateParams{ContextSize: 16384, Parallel: 4, FlashAttn: "on"})
	rescan()
	if e := get("m"); e.RAM <= 0 || e.ContextSize != 16384 {
		t.Errorf("parallel + flash attention: %+v", e)
	}

	// The projector adds to the model it pairs with.
	params.set("m", EstimateParams{ContextSize: 4096})
	rescan()
	if v, m := get("v"), get("m"); v.RAM <= m.RAM {
		t.Errorf("with projector %+v, without %+v: want more RAM", v, m)
	}
}
