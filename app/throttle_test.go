package app

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestThrottleSpacesRunsAndServesTheLastKick(t *testing.T) {
	const interval = 25 * time.Millisecond
	var (
		mu     sync.Mutex // guards starts
		starts []time.Time
	)
	var seen, latest atomic.Int64 // seen: the latest value a run observed; latest: the last kicked value
	running := atomic.Bool{}
	th := newThrottle(interval, func() {
		if !running.CompareAndSwap(false, true) {
			t.Error("fn ran concurrently with itself")
		}
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		seen.Store(latest.Load())
		running.Store(false)
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { th.run(ctx); close(done) }()

	deadline := time.Now().Add(300 * time.Millisecond)
	for i := int64(1); time.Now().Before(deadline); i++ {
		latest.Store(i)
		th.Kick()
		time.Sleep(time.Millisecond) // a burst of events, one per millisecond
	}
	want := latest.Load()
	for end := time.Now().Add(5 * time.Second); seen.Load() != want; {
		if time.Now().After(end) {
			t.Fatalf("the last kick (%d) was never served; last run saw %d", want, seen.Load())
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done

	mu.Lock()
	defer mu.Unlock()
	if len(starts) < 2 {
		t.Fatalf("%d runs for a 300ms burst, want several", len(starts))
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < interval {
			t.Errorf("runs %d and %d only %v apart, want ≥ %v", i-1, i, gap, interval)
		}
	}
	if int64(len(starts)) >= want {
		t.Errorf("%d runs for %d kicks: nothing was coalesced", len(starts), want)
	}
}

func TestThrottleKickNeverBlocks(t *testing.T) {
	th := newThrottle(time.Hour, func() {})
	for i := 0; i < 1000; i++ {
		th.Kick() // nobody is running the throttle: must not block
	}
}
