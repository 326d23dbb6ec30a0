package app

import (
	"testing"
	"time"

	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/service"
)

// parkTestUI is a ui with a park whose UI thread is the test: what it queues for the loop waits
// in the returned channel.
func parkTestUI() (*ui, chan func()) {
	queue := make(chan func(), 16)
	p := newLoopPark()
	p.xconn = func() xConn { return noX } // no X connection in a unit test
	u := &ui{park: p}
	u.loopDo = func(f func()) { queue <- f }
	return u, queue
}

func nextQueued(t *testing.T, queue chan func(), what string) func() {
	t.Helper()
	select {
	case f := <-queue:
		return f
	case <-time.After(10 * time.Second):
		t.Fatalf("nothing queued for the UI thread: %s", what)
		return nil
	}
}

// A park that returns on a kick whose work already ran (the kick came just before the park began)
// is followed by another park: the loop does not stay awake at 60 frames a second with no window.
func TestParkAfterEarlyKick(t *testing.T) {
	u, queue := parkTestUI()
	u.settle()
	park := nextQueued(t, queue, "the first park")
	// onUI's work arrives before the park runs: it kicks, runs at once, and settles while the park
	// is still queued.
	u.park.kick()
	u.settle()
	park() // returns at once: kicked
	nextQueued(t, queue, "a park after the kicked one")
}

// A shown window does not keep Fyne's loop running: it parks too, unless a row animates by itself
// (the bar of a load without progress reports), and parks again once the load is done.
func TestShownWindowParks(t *testing.T) {
	u, queue := parkTestUI()
	u.models = &modelsWindow{u: u, visible: true}
	u.snap = snap(model("alpha", service.StateLoading, nil))
	u.settle()
	select {
	case <-queue:
		t.Fatal("the loop parks while the window shows a load's moving bar")
	default:
	}
	u.snap = snap(model("alpha", service.StateLoaded, nil))
	u.settle()
	u.park.kick()
	nextQueued(t, queue, "a park with the window shown")()
}

// How long a park may last: up to parkPoll, and up to parkBlink (the step of a text field's
// blinking cursor) while a window of the app is in front with a text field that has the focus.
func TestParkBound(t *testing.T) {
	u, _, l := newTestUI(t, snap())
	l.wait(func() {
		prompt := &promptEntry{}
		prompt.ExtendBaseWidget(prompt)
		w := u.app.NewWindow("Try it")
		w.SetContent(container.NewVBox(prompt, widget.NewButton("Send", func() {})))
		w.Show()
		for _, c := range []struct {
			front, typing bool
			want          time.Duration
		}{{false, false, parkPoll}, {true, false, parkPoll}, {false, true, parkPoll}, {true, true, parkBlink}} {
			u.front = c.front
			w.Canvas().Unfocus()
			if c.typing {
				w.Canvas().Focus(prompt)
			}
			if got := u.parkBound(); got != c.want {
				t.Errorf("in front %v, a text field focused %v: parks up to %s, want %s", c.front, c.typing, got, c.want)
			}
		}
	})
}
