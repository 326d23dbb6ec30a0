package app

import (
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/driver/desktop"
)

// keyboard types into whatever has the focus of a window, as a person at the keyboard does: no
// widget is named, so a window that does not give its field the cursor gets nothing. It counts the
// keys pressed. Calls go through the UI loop.
type keyboard struct {
	t    *testing.T
	l    *uiLoop
	keys int
}

// focused is what has the focus of w, failing the test when nothing does.
func (k *keyboard) focused(w fyne.Window) fyne.Focusable {
	k.t.Helper()
	var f fyne.Focusable
	k.l.wait(func() { f = w.Canvas().Focused() })
	if f == nil {
		k.t.Fatalf("nothing in %q has the keyboard focus", w.Title())
	}
	return f
}

// typeText types text into what has the focus, as the driver hands it typed runes.
func (k *keyboard) typeText(w fyne.Window, text string) {
	k.t.Helper()
	f := k.focused(w)
	k.l.wait(func() {
		for _, r := range text {
			f.TypedRune(r)
		}
	})
	k.keys += len([]rune(text))
}

// press presses a key in what has the focus; with shift, Shift is held down around it.
func (k *keyboard) press(w fyne.Window, name fyne.KeyName, shift bool) {
	k.t.Helper()
	f := k.focused(w)
	k.l.wait(func() {
		kb, _ := f.(desktop.Keyable)
		down := &fyne.KeyEvent{Name: desktop.KeyShiftLeft}
		if shift && kb != nil {
			kb.KeyDown(down)
		}
		if kb != nil {
			kb.KeyDown(&fyne.KeyEvent{Name: name})
		}
		f.TypedKey(&fyne.KeyEvent{Name: name})
		if kb != nil {
			kb.KeyUp(&fyne.KeyEvent{Name: name})
		}
		if shift && kb != nil {
			kb.KeyUp(down)
		}
	})
	k.keys++
	if shift {
		k.keys++
	}
}
