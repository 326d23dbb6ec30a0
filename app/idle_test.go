package app

import (
	"testing"
	"time"
)

// A park that returns on a kick whose work already ran (the kick came just before the park began)
// is followed by another park: the loop does not stay awake at 60 frames a second with no window.
func TestParkAfterEarlyKick(t *testing.T) {
	queue := make(chan func(), 16) // what the test's UI thread has to run, in order
	u := &ui{park: newLoopPark()}
	u.loopDo = func(f func()) { queue <- f }
	next := func(what string) func() {
		t.Helper()
		select {
		case f := <-queue:
			return f
		case <-time.After(10 * time.Second):
			t.Fatalf("nothing queued for the UI thread: %s", what)
			return nil
		}
	}

	u.settle()
	park := next("the first park")
	// onUI's work arrives before the park runs: it kicks, runs at once, and settles while the park
	// is still queued.
	u.park.kick()
	u.settle()
	park() // returns at once: kicked
	next("a park after the kicked one")()
}
