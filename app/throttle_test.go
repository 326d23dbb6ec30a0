package app

import (
	"context"
	"sync"
	"testing"
	"time"
)

// fakeClock is a throttle's clock that moves only when the test says. Each wait the throttle asks
// for is handed to the test on waits, which fires it.
type fakeClock struct {
	t0    time.Time  // the start: set counts from it
	mu    sync.Mutex // guards at
	at    time.Time
	waits chan fakeWait
}

type fakeWait struct {
	d    time.Duration
	fire chan time.Time
}

func newFakeClock() *fakeClock {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &fakeClock{t0: t0, at: t0, waits: make(chan fakeWait)}
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

// set moves the clock to d past its start.
func (c *fakeClock) set(d time.Duration) {
	c.mu.Lock()
	c.at = c.t0.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) after(d time.Duration) <-chan time.Time {
	w := fakeWait{d: d, fire: make(chan time.Time, 1)}
	c.waits <- w
	return w.fire
}

// within fails the test unless v arrives on ch soon; it guards against a hang, it times nothing.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
		var zero T
		return zero
	}
}

func TestThrottleSpacesRunsAndServesTheLastKick(t *testing.T) {
	const interval = 25 * time.Millisecond
	clock := newFakeClock()
	type start struct {
		at      time.Time
		pending int // kicks waiting when the run started
		release chan struct{}
	}
	starts := make(chan start)
	var th *throttle
	th = newThrottle(interval, func() {
		s := start{at: clock.now(), pending: len(th.kick), release: make(chan struct{})}
		starts <- s
		<-s.release
	})
	th.now, th.after = clock.now, clock.after
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { th.run(ctx); close(done) }()

	// The first kick runs at once: there is no run to be spaced from.
	th.Kick()
	first := within(t, starts, "first run")
	if !first.at.Equal(clock.t0) {
		t.Fatalf("first run at %v, want at once", first.at.Sub(clock.t0))
	}
	close(first.release)

	// 10ms later a burst of kicks: one wait for the rest of the interval, then one run for them all.
	clock.set(10 * time.Millisecond)
	for range 5 {
		th.Kick()
	}
	w := within(t, clock.waits, "wait after the burst")
	if w.d != interval-10*time.Millisecond {
		t.Fatalf("waited %v after a run 10ms ago, want %v", w.d, interval-10*time.Millisecond)
	}
	th.Kick() // while waiting: folded into the same run
	clock.set(interval)
	w.fire <- clock.now()
	second := within(t, starts, "run after the burst")
	if second.pending != 0 {
		t.Fatalf("%d kicks still pending when the run began: the burst was not folded into it", second.pending)
	}
	if gap := second.at.Sub(first.at); gap < interval {
		t.Fatalf("runs %v apart, want ≥ %v", gap, interval)
	}

	// A kick while the run is under way is followed by one more run, spaced from this one.
	th.Kick()
	clock.set(interval + 5*time.Millisecond)
	close(second.release)
	w = within(t, clock.waits, "wait for the kick made during a run")
	if w.d != interval-5*time.Millisecond {
		t.Fatalf("waited %v, want %v", w.d, interval-5*time.Millisecond)
	}
	clock.set(2 * interval)
	w.fire <- clock.now()
	third := within(t, starts, "run for the kick made during a run")
	close(third.release)

	// A kick long after the last run runs at once, without a wait.
	clock.set(time.Hour)
	th.Kick()
	fourth := within(t, starts, "run after a quiet hour")
	close(fourth.release)

	// Cancelling ends a wait.
	th.Kick()
	within(t, clock.waits, "wait before cancelling")
	cancel()
	within(t, done, "end of run after cancel")
}

func TestThrottleOnTheRealClockServesTheLastKick(t *testing.T) {
	seen := make(chan int, 1000)
	var (
		mu     sync.Mutex // guards latest
		latest int        // the value of the last kick
	)
	th := newThrottle(time.Millisecond, func() {
		mu.Lock()
		v := latest
		mu.Unlock()
		seen <- v
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go th.run(ctx)
	const kicks = 200
	for i := 1; i <= kicks; i++ {
		mu.Lock()
		latest = i
		mu.Unlock()
		th.Kick()
	}
	runs := 0
	for v := 0; v != kicks; runs++ {
		v = within(t, seen, "run that saw the last kick")
	}
	if runs >= kicks {
		t.Errorf("%d runs for %d kicks: nothing was coalesced", runs, kicks)
	}
}

func TestThrottleKickNeverBlocks(t *testing.T) {
	th := newThrottle(time.Hour, func() {})
	for range 1000 {
		th.Kick() // nobody is running the throttle: must not block
	}
}
