package app

import (
	"errors"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"
)

// The models window exists from the start without its content; everything done to it before the
// first show is kept and shown then, and a show through Fyne's driver (a click on the tray icon)
// is noticed when the window is drawn.
func TestModelsWindowContentBuiltOnFirstShow(t *testing.T) {
	u, _, l := newTestUI(t, windowSnapshot())
	sent := make(chan *fyne.Notification, 4)
	u.send = func(n *fyne.Notification) { sent <- n }
	var m *modelsWindow
	// t.Fatal is not called on the UI loop: it would stop the loop, not the test.
	l.wait(func() {
		m = newModelsWindow(u)
		u.models = m
		if m.built() || m.win.Content() != m.shownSensor {
			t.Errorf("content built before the first show: %T", m.win.Content())
		}
		u.apply(u.snap)
		m.setStatus("Added gemma-2b.gguf.")
		m.setProgress(true, 0.25)
		m.dropped([]fyne.URI{storage.NewFileURI("/tmp/notes.txt")})
		u.showError("Load qwen-7b", errors.New("out of memory"))
		if m.built() {
			t.Error("content built before the first show")
		}
	})
	for _, want := range []string{"Add model failed", "Load qwen-7b failed"} {
		if n := <-sent; n.Title != want {
			t.Errorf("notification %q, want %q", n.Title, want)
		}
	}

	// A click on the tray icon: Fyne's driver shows the window and draws it.
	l.wait(func() {
		m.win.Show()
		m.win.Canvas().Capture()
	})
	var opened bool
	l.wait(func() { opened = m.visible && m.built() })
	if !opened {
		t.Fatal("window drawn but not opened")
	}
	l.wait(func() {
		if !hasText(m.list, "qwen-7b") || !hasText(m.win.Content(), "Added gemma-2b.gguf.") {
			t.Errorf("window shows %q", texts(m.win.Content()))
		}
		if !m.progress.Visible() || m.progress.Value != 0.25 {
			t.Errorf("progress visible %v at %v, want visible at 0.25", m.progress.Visible(), m.progress.Value)
		}
		m.hide()
		m.update(windowSnapshot()) // hidden: not shown, but kept
	})

	// Shown again by the driver after hide: noticed again.
	l.wait(func() {
		m.win.Show()
		m.win.Canvas().Capture()
	})
	l.wait(func() {
		if !m.visible {
			t.Error("window shown again by the driver but not opened")
		}
	})
}
