package app

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/llamatray/llamatray/router/service"
)

// Fyne's event loop wakes 60 times a second, window or none, to poll the X server and draw: alone
// it kept an idle app in the tray at about 1.5% of a core, and an idle open window at 2.5-3.9%.
// Where the tray does not live in that loop (Linux and the BSDs: package sni), the loop is parked
// whenever nothing on screen moves: a function run on it (fyne.Do) blocks the UI thread until
// there is work for it.
//
// What wakes a park at once: work that comes through ui.onUI (it kicks first: a model's state, a
// download's progress, an answer's tokens), and on Linux any X event (a key, a click, the pointer,
// a window mapped, exposed or closed, another program asking for what was copied): the park waits
// on the X connection's socket as well. After an X event the loop runs at full rate for parkGrace,
// so that what input starts runs smoothly: a button's tap animation, the wait for a double click.
//
// What the park bounds: Fyne's own work queued for its thread without a kick (its settings
// watcher, the end of a double-click wait) and its animations. The park lasts up to parkPoll,
// unless a window of the app is in front (Fyne's Lifecycle tells) with a text field that has the
// keyboard focus: its cursor blinks (Fyne animates it, fading for a tenth of each half second), so
// the park lasts up to parkBlink, a frame each half second, and the cursor blinks as before. While
// a shown row animates by itself (a load without progress reports) the loop is not parked.
//
// Each frame Fyne walks every shown window's widgets (about 7 ms for the models window under a
// software renderer), so a park that ends on its bound is followed by one frame only (parkTick),
// one that ends on a kick by the frames that draw the kicked work (parkAgain).
const (
	parkPoll  = 10 * time.Second
	parkBlink = 500 * time.Millisecond
	parkAgain = 40 * time.Millisecond  // two of Fyne's frames: the kicked work, then a poll of X events and a draw at least
	parkTick  = 5 * time.Millisecond   // less than a frame: the frame that came due during the park runs first
	parkGrace = 400 * time.Millisecond // longer than Fyne's tap animations and double-click wait (300 ms)
)

// wakeReason is why a park ended.
type wakeReason int

const (
	wokeTimeout wakeReason = iota // its bound passed
	wokeKick                      // work for the UI thread (kick)
	wokeX                         // an X event is waiting to be read
)

// xConn is the X connection Fyne's loop reads events from: its socket, and whether Xlib already
// holds events it read from it (XPending). fd is -1 where there is none (no X, or not Linux).
type xConn struct {
	fd      int
	pending func() bool
}

var noX = xConn{fd: -1}

// loopPark parks Fyne's loop; see above.
type loopPark struct {
	w      *waker      // kicks and the wait itself (idle_linux.go, idle_other.go)
	queued atomic.Bool // a park is scheduled, queued or running
	// xconn is the X connection (xConnection), looked up by each park and never kept: once Fyne's
	// loop has ended, fyne.Do runs a park at once on its caller's goroutine, and GLFW has closed
	// the display by then (the lookup then finds none).
	xconn func() xConn
}

func newLoopPark() *loopPark { return &loopPark{w: newWaker(), xconn: xConnection} }

// kick wakes a parked loop, or keeps the next park from waiting. It never blocks.
func (p *loopPark) kick() { p.w.kick() }

// wait blocks the UI thread until kicked, an X event is waiting, or d has passed.
func (p *loopPark) wait(d time.Duration) wakeReason {
	return p.w.wait(p.xconn(), d)
}

// settle parks Fyne's loop soon, unless something shown animates or a park is already on its way.
// It runs on the UI thread, after whatever may have changed what is shown.
func (u *ui) settle() { u.parkIn(parkAgain) }

func (u *ui) parkIn(d time.Duration) {
	p := u.park
	if p == nil || u.animating() || !p.queued.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(d, func() { u.loopDo(u.parkLoop) })
}

// parkLoop is the park itself, on the UI thread.
func (u *ui) parkLoop() {
	p := u.park
	if u.animating() {
		p.queued.Store(false)
		return
	}
	why := p.wait(u.parkBound())
	p.queued.Store(false)
	// Kicked or not, the next park is scheduled now: Fyne's loop runs a frame or two (and the work
	// queued behind this park), then parks again. Leaving it to that work's own settle lost the
	// park for good when the kick came before the park began and its work had already run (its
	// settle then found this park queued): the loop went on at 60 frames a second.
	next := map[wakeReason]time.Duration{wokeTimeout: parkTick, wokeKick: parkAgain, wokeX: parkGrace}[why]
	u.parkIn(next)
}

// parkBound is how long a park may last: see above.
func (u *ui) parkBound() time.Duration {
	if u.front && u.app != nil {
		for _, w := range u.app.Driver().AllWindows() {
			if _, ok := w.Canvas().Focused().(textField); ok {
				return parkBlink
			}
		}
	}
	return parkPoll
}

// textField is a widget.Entry, or a widget that embeds one (Try it's prompt).
type textField interface{ SelectedText() string }

// animating reports whether a shown window has something that moves by itself: the models
// window's bar of a load without progress reports (modelrow.go).
func (u *ui) animating() bool {
	return u.models != nil && u.models.visible && slices.ContainsFunc(u.snap.Models, func(m Model) bool {
		return m.State == service.StateLoading && m.Progress <= 0
	})
}
