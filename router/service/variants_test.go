package service

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
	"github.com/llamatray/llamatray/router/wire"
)

const variantsConfig = `
scan_default_dirs = false
[defaults]
ctx_size = 4096
[models.m]
ctx_size = 1024
args = ["--temp", "0.7"]
[models.m.variants.small]
ctx_size = 512
cache_type = "q8_0"
aliases = ["m-small"]
[models.m.variants.big]
ctx_size = 2048
gpu_layers = 0
args = ["--top-k", "5"]
`

// Variants of one file become models of their own, listed by GET /v1/models, estimated and run
// with their own settings over their model's; a variant's pin is saved in its own section.
func TestVariantsBecomeModels(t *testing.T) {
	isolateHome(t)
	models := t.TempDir()
	hdr := ggufwrite.HeaderOptions{Blocks: 4, Embedding: 256, FFN: 512, Heads: 4, Vocab: 512, ContextLength: 4096}
	if err := ggufwrite.WriteFile(filepath.Join(models, "m.gguf"), ggufwrite.Header(hdr)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	cfg, err := config.Parse(path, []byte(variantsConfig))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg.ModelDirs = []string{models}
	cfg.LlamaServer = testbed.FakeLlamaServer(t)
	svc := startedService(t, cfg, path)

	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "http://"+cfg.Listen+"/v1/models", nil)
	svc.ServeHTTP(rec, req)
	var list wire.ModelList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatalf("GET /v1/models: %v\n%s", err, rec.Body)
	}
	byID := map[string]wire.Model{}
	var ids []string
	for _, m := range list.Data {
		byID[m.ID] = m
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []string{"m", "m@big", "m@small"}) {
		t.Fatalf("GET /v1/models lists %v: %s; warnings %v", ids, rec.Body, svc.Catalog().Warnings())
	}
	small := byID["m@small"]
	if small.Meta == nil || small.Meta.VariantOf != "m" || small.Meta.Variant != "small" || small.CtxSize != 512 || !slices.Equal(small.Aliases, []string{"m-small"}) {
		t.Fatalf("m@small: %+v %+v", small, small.Meta)
	}
	if byID["m"].Meta.VariantOf != "" || byID["m"].CtxSize != 1024 || byID["m@big"].CtxSize != 2048 {
		t.Fatalf("m: %+v; m@big: %+v", byID["m"], byID["m@big"])
	}
	est := func(id string) int64 { return byID[id].Status.MemoryEstimateBytes }
	if !(est("m@small") < est("m") && est("m") < est("m@big")) {
		t.Fatalf("estimates: small %d, m %d, big %d: each should follow its own context", est("m@small"), est("m"), est("m@big"))
	}

	for _, tt := range []struct {
		name string
		want []string // runs of arguments, each in order
	}{
		{"m-small", []string{"--alias m@small", "-c 512", "-ctk q8_0 -ctv q8_0 --temp 0.7"}},
		{"m@big", []string{"--alias m@big", "-c 2048", "-ngl 0 --temp 0.7 --top-k 5"}},
		{"m", []string{"--alias m", "-c 1024", "--temp 0.7"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		l, err := svc.Engine().Acquire(ctx, tt.name)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		st, _ := svc.Engine().Model(l.Model)
		l.Release()
		args := strings.Join(st.Args, " ")
		for _, w := range tt.want {
			if !strings.Contains(args, w) {
				t.Errorf("%s runs with %q, want %q in it", tt.name, args, w)
			}
		}
		if strings.Contains(args, "-c 4096") || st.Path != filepath.Join(models, "m.gguf") {
			t.Errorf("%s: args %q, path %s", tt.name, args, st.Path)
		}
	}

	if err := svc.SetPinned("m@big", true); err != nil {
		t.Fatal(err)
	}
	saved, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if v := saved.Models["m"].Variants["big"]; !v.Pinned || v.CtxSize != 2048 || saved.Models["m"].Pinned || len(saved.Models["m"].Variants) != 2 {
		t.Fatalf("after pinning m@big the file holds %+v", saved.Models["m"])
	}
	if st, _ := svc.Engine().Model("m@big"); !st.Pinned {
		t.Fatal("m@big is not pinned")
	}
	if st, _ := svc.Engine().Model("m"); st.Pinned {
		t.Fatal("pinning a variant pinned its model")
	}
}
