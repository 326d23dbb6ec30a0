package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed"
)

// With a memory limit (no model cap) that holds one tiny model but not two, the second model waits for
// the first one's stream, then evicts it; the stream is never cut.
func TestMemoryBudgetRoomForOne(t *testing.T) {
	in := startWidth(t, slowWidth, []string{"alpha", "beta"}, func(c *config.Config) { c.Defaults.CtxSize = 2048 })
	ctx := context.Background()
	// Measure what one child really holds, then allow one and a half of it.
	if err := in.svc.Engine().Load(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	testbed.WaitFor(t, 10*time.Second, "alpha measured", func() bool { return in.state("alpha").MemoryBytes > 0 })
	held := max(in.state("alpha").MemoryBytes, in.state("beta").EstimateBytes)
	cfg := in.svc.Config()
	cfg.MemoryLimit = config.Size(held * 3 / 2)
	cfg.MemoryReserve = 0
	if err := in.svc.Edit(func(c *config.Config) error { *c = cfg.Clone(); return nil }); err != nil {
		t.Fatal(err)
	}
	t.Logf("one child holds or needs %d MiB; memory limit %d MiB", held>>20, int64(cfg.MemoryLimit)>>20)
	in.streamOutlastsOtherModel(ctx, "alpha", "beta")
	if st := in.state("alpha"); st.State != engine.StateUnloaded {
		t.Fatalf("alpha is %s; the budget holds one model", st.State)
	}
	b := in.svc.Engine().Budget()
	if b.Used > b.Limit || b.Loaded != 1 {
		t.Fatalf("budget %+v", b)
	}
}
