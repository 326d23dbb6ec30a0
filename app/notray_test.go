package app

import (
	"testing"
)

// Without a tray host the models window says so and offers Quit, and closing it quits; with one,
// closing it only hides it.
func TestNoTrayHost(t *testing.T) {
	u, l := newTestUIWith(t, newFakeBackend(windowSnapshot()))
	quits := 0
	u.quit = func() { quits++ }
	l.wait(func() {
		u.models = newModelsWindow(u)
		u.models.show()
		if hasText(u.models.win.Content(), "No system tray") {
			t.Error("the no-tray banner shows while a tray host is there")
		}
		u.setTrayHosted(false)
		if !hasText(u.models.win.Content(), "No system tray") {
			t.Errorf("no banner without a tray host: %q", texts(u.models.win.Content()))
		}
	})
	shoot(t, l, u.models.win, "no-tray")
	l.wait(func() {
		findButton(t, u.models.banners, "Quit").OnTapped()
		if quits != 1 {
			t.Errorf("Quit in the window quit %d times", quits)
		}
		u.closeModels()
		if quits != 2 {
			t.Error("closing the window without a tray host did not quit")
		}
		u.setTrayHosted(true) // a host appeared
		u.closeModels()
		if quits != 2 || u.models.visible {
			t.Errorf("with a tray host, closing quit (%d) or did not hide (visible %v)", quits, u.models.visible)
		}
	})
}
