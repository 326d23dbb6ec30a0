package app

import (
	"sync/atomic"
	"time"
)

// Fyne's event loop wakes 60 times a second, window or none, to poll the X server and draw: alone
// it kept an idle app in the tray at about 1.5% of a core. Where the tray does not live in that
// loop (Linux and the BSDs: package sni), the loop is parked while no window is shown: a function
// run on it (fyne.Do) waits until there is work for the UI thread.
//
// Work comes through ui.onUI, which wakes the loop first. Anything else Fyne queues for its
// thread (its own SIGTERM handler, settings changes), and X events such as another program asking
// for what was copied to the clipboard, wait at most parkPoll: the park then returns and is
// queued again a moment later, so that the loop polls X events once in between.
const (
	parkPoll  = 2 * time.Second
	parkAgain = 40 * time.Millisecond // two of Fyne's frames: one poll of X events at least
)

// loopPark parks Fyne's loop; see above.
type loopPark struct {
	wake   chan struct{} // capacity 1: work is waiting for the UI thread
	queued atomic.Bool   // a park is scheduled, queued or running
}

func newLoopPark() *loopPark { return &loopPark{wake: make(chan struct{}, 1)} }

// kick wakes a parked loop, or keeps the next park from waiting. It never blocks.
func (p *loopPark) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// wait blocks the UI thread until kicked or parkPoll has passed.
func (p *loopPark) wait() {
	t := time.NewTimer(parkPoll)
	defer t.Stop()
	select {
	case <-p.wake:
	case <-t.C:
	}
}

// settle parks Fyne's loop soon, unless a window is shown or a park is already on its way. It runs
// on the UI thread, after whatever may have closed the last window.
func (u *ui) settle() {
	p := u.park
	if p == nil || u.windowShown() || !p.queued.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(parkAgain, func() { u.loopDo(u.parkLoop) })
}

// parkLoop is the park itself, on the UI thread.
func (u *ui) parkLoop() {
	p := u.park
	if u.windowShown() {
		p.queued.Store(false)
		return
	}
	p.wait()
	p.queued.Store(false)
	// Kicked or not, the next park is scheduled now: Fyne's loop runs a frame or two (and the work
	// queued behind this park), then parks again. Leaving it to that work's own settle lost the
	// park for good when the kick came before the park began and its work had already run (its
	// settle then found this park queued): the loop went on at 60 frames a second, window or none.
	u.settle()
}
