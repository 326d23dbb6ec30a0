package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/llamatray/llamatray/router/testbed/bench/harness"
)

// coldResult compares a cold load through Llamatray with starting llama-server by hand.
type coldResult struct {
	direct []time.Duration // spawn → first /health 200
	router []time.Duration // request for an unloaded model → first byte of its streamed answer
}

func (c coldResult) overhead() time.Duration {
	return harness.Median(c.router) - harness.Median(c.direct)
}

// measureCold runs n rounds, each one direct spawn (then stopped) and one cold load through svc
// (unloaded again afterwards), interleaved so both see the same machine load.
func measureCold(ctx context.Context, c *http.Client, svc *harness.Process, bin, model, id string, args []string, tmp string, n int) (coldResult, error) {
	var out coldResult
	body := harness.ChatBody(id, true, 1, 42)
	for i := range n {
		d, took, err := harness.StartDirect(ctx, bin, model, args, filepath.Join(tmp, fmt.Sprintf("cold-direct-%d.log", i)))
		if err != nil {
			return out, fmt.Errorf("cold run %d, direct: %w", i, err)
		}
		d.Stop()
		out.direct = append(out.direct, took)

		if err := svc.Unload(ctx, id, false); err != nil {
			return out, fmt.Errorf("cold run %d, unload: %w", i, err)
		}
		if st, err := svc.State(ctx, id); err != nil || st != "unloaded" {
			return out, fmt.Errorf("cold run %d: model is %q after unload (%v), want unloaded", i, st, err)
		}
		r := harness.Do(ctx, c, harness.Request{URL: svc.ChatURL(), Body: body, Stream: true, Retryable: true})
		if !r.OK() {
			return out, fmt.Errorf("cold run %d, router: %s", i, describe(r))
		}
		out.router = append(out.router, r.TTFB)
	}
	return out, nil
}
