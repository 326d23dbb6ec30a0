package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/wire"
)

// TestActivityFromRealTimings sends a streamed and a plain chat to the real llama-server and reads
// GET /api/activity: tokens, time to first token and tokens per second come from the timings
// llama-server reports, in a JSON answer and at a stream's end.
func TestActivityFromRealTimings(t *testing.T) {
	in := start(t, []string{"alpha"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, stream := range []bool{true, false} {
		if code, body, err := in.chat(ctx, "alpha", stream, 8); err != nil || code != 200 {
			t.Fatalf("stream %v: %d %v %.300s", stream, code, err, body)
		}
	}
	resp, err := http.Get(in.base + "/api/activity")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc wire.Activity
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Models) != 1 || doc.Models[0].Model != "alpha" {
		t.Fatalf("activity %+v", doc)
	}
	tot := doc.Models[0].Total
	t.Logf("activity: %+v", tot)
	if tot.Requests != 2 || tot.Errors != 0 {
		t.Fatalf("requests %d errors %d", tot.Requests, tot.Errors)
	}
	if tot.TokensOut != 16 || tot.TokensIn < 2 {
		t.Fatalf("tokens in %d out %d: the timings were not read from both answers", tot.TokensIn, tot.TokensOut)
	}
	if tot.TTFTMs <= 0 || tot.TokensPerSecond <= 0 || tot.QueueWaitMs <= 0 {
		t.Fatalf("timings %+v", tot)
	}
}

// TestPerModelCacheTypeAndSlots runs the real llama-server with a model's own flash_attn, parallel
// and cache_type: it takes the flags, answers, and the engine shows them. The model's heads are
// 32 values wide, a whole q8_0 block (llama-server refuses narrower ones, as the catalog does).
func TestPerModelCacheTypeAndSlots(t *testing.T) {
	in := startWidth(t, 128, []string{"alpha"}, func(c *config.Config) {
		c.Models = map[string]config.Model{"alpha": {FlashAttn: "on", Parallel: 2, CacheType: "q8_0"}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if code, body, err := in.chat(ctx, "alpha", true, 4); err != nil || code != 200 {
		t.Fatalf("chat: %d %v %.300s", code, err, body)
	}
	args := strings.Join(in.state("alpha").Args, " ")
	for _, want := range []string{"-fa on", "-np 2", "-ctk q8_0 -ctv q8_0"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
}
