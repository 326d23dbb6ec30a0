package service

import (
	"context"
	"time"
)

// repeat runs check after first, then every every, until ctx ends: the service's daily checks.
func repeat(ctx context.Context, first, every time.Duration, check func(context.Context)) {
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		check(ctx)
		t.Reset(every)
	}
}
