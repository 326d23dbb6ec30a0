package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/wire"
)

// Two variants of one GGUF, tiny@small (ctx 512) and tiny@big (ctx 2048), are two models: both
// answer chat side by side, each from a real llama-server child started with its own --ctx-size
// (as the child itself reports in /props), and GET /v1/models lists them with the file's own ID.
// A footprint measured for one is shared with a variant run the same way, not with one of another
// context.
func TestVariantsOfOneFile(t *testing.T) {
	in := start(t, []string{"tiny"}, func(c *config.Config) {
		c.Models = map[string]config.Model{"tiny": {Variants: map[string]config.Model{
			"small": {CtxSize: 512},
			"cool":  {CtxSize: 512, Args: []string{"--temp", "0.1"}}, // runs as tiny@small does, memory-wise
			"big":   {CtxSize: 2048, Aliases: []string{"tiny-big"}},
		}}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	resp, err := http.Get(in.base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list wire.ModelList
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
		if m.ID != "tiny" && (m.Meta == nil || m.Meta.VariantOf != "tiny") {
			t.Errorf("%s: meta %+v, want a variant of tiny", m.ID, m.Meta)
		}
	}
	if !slices.Equal(ids, []string{"tiny", "tiny@big", "tiny@cool", "tiny@small"}) {
		t.Fatalf("GET /v1/models lists %v", ids)
	}

	for _, name := range []string{"tiny@small", "tiny-big"} {
		if code, body, err := in.chat(ctx, name, false, 4); err != nil || code != 200 {
			t.Fatalf("chat with %s: %d %v %.300s", name, code, err, body)
		}
	}
	small, big := in.state("tiny@small"), in.state("tiny@big")
	if small.PID == 0 || big.PID == 0 || small.PID == big.PID {
		t.Fatalf("children: tiny@small pid %d, tiny@big pid %d; want one each", small.PID, big.PID)
	}
	if small.Path != big.Path {
		t.Fatalf("variants load different files: %s and %s", small.Path, big.Path)
	}
	for _, c := range []struct {
		id, args string
		ctx      int
	}{{"tiny@small", strings.Join(small.Args, " "), 512}, {"tiny@big", strings.Join(big.Args, " "), 2048}} {
		if !strings.Contains(c.args, "--alias "+c.id+" ") || !strings.Contains(c.args, " -c "+strconv.Itoa(c.ctx)+" ") {
			t.Errorf("%s runs with %q", c.id, c.args)
		}
		if got := childCtx(t, in.base, c.id); got != c.ctx {
			t.Errorf("%s's llama-server reports n_ctx %d, want %d", c.id, got, c.ctx)
		}
	}
	// both still answer, one after the other, without a reload
	for _, name := range []string{"tiny@big", "tiny@small"} {
		if code, body, err := in.chat(ctx, name, true, 4); err != nil || code != 200 || !strings.Contains(body, "data: ") {
			t.Fatalf("stream from %s: %d %v %.300s", name, code, err, body)
		}
	}
	if in.state("tiny@small").PID != small.PID || in.state("tiny@big").PID != big.PID {
		t.Fatal("a variant's child was restarted")
	}

	// What tiny@small's child was measured to hold is tiny@cool's too (same file, same memory
	// settings), before tiny@cool ever ran; tiny@big learns its own.
	testbed.WaitFor(t, 20*time.Second, "footprints learned", func() bool {
		return in.state("tiny@small").LearnedBytes > 0 && in.state("tiny@big").LearnedBytes > 0
	})
	testbed.WaitFor(t, 10*time.Second, "tiny@small's footprint shared with tiny@cool", func() bool {
		return in.state("tiny@cool").LearnedBytes == in.state("tiny@small").LearnedBytes
	})
	if c := in.state("tiny@cool"); c.State != engine.StateUnloaded || c.EstimateBytes != c.LearnedBytes {
		t.Fatalf("tiny@cool: %s, needs %d, learned %d", c.State, c.EstimateBytes, c.LearnedBytes)
	}
	if b, s := in.state("tiny@big"), in.state("tiny@small"); b.LearnedBytes == s.LearnedBytes {
		t.Fatalf("tiny@big (ctx 2048) and tiny@small (ctx 512) share a footprint: %d", b.LearnedBytes)
	}
}

// childCtx is the context size model id's llama-server says it runs with (GET /props).
func childCtx(t *testing.T, base, id string) int {
	t.Helper()
	resp, err := http.Get(base + "/upstream/" + id + "/props")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var props struct {
		Settings struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&props); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /upstream/%s/props: %d %v", id, resp.StatusCode, err)
	}
	return props.Settings.NCtx
}
