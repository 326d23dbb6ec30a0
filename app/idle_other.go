//go:build !linux

package app

import "time"

// waker elsewhere: a kick is a token in a channel. There is no X connection to wait on (the BSDs'
// X events wait for the park's bound).
type waker struct {
	wake chan struct{} // capacity 1: work is waiting for the UI thread
}

func newWaker() *waker { return &waker{wake: make(chan struct{}, 1)} }

func (w *waker) kick() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *waker) wait(_ xConn, d time.Duration) wakeReason {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.wake:
		return wokeKick
	case <-t.C:
		return wokeTimeout
	}
}
