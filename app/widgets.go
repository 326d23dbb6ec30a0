package app

// The app's own small constructors of widgets and windows, so that each kind looks and behaves the
// same wherever it is used.

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// newWindow is a window of the app, with its icon, at size (zero: its content's; a window that
// sizes itself once its content is set).
func (u *ui) newWindow(title string, size fyne.Size) fyne.Window {
	w := u.app.NewWindow(title)
	w.SetIcon(appIcon)
	if !size.IsZero() {
		w.Resize(size)
	}
	return w
}

// raise shows w, and brings it forward when it is open already.
func raise(w fyne.Window) {
	w.Show()
	w.RequestFocus()
}

// openFile asks for a file (one of exts, when given) and hands its path to use; fail, when not
// nil, is told why the dialog failed. Cancelled, it does nothing.
func openFile(win fyne.Window, exts []string, use func(path string), fail func(error)) {
	d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
		if err != nil && fail != nil {
			fail(err)
		}
		if err != nil || r == nil {
			return
		}
		path := r.URI().Path()
		r.Close()
		use(path)
	}, win)
	if exts != nil {
		d.SetFilter(storage.NewExtensionFileFilter(exts))
	}
	d.Show()
}

func wrapLabel(text string) *widget.Label {
	l := widget.NewLabel(text)
	l.Wrapping = fyne.TextWrapWord
	return l
}

// boldLabel is a label in bold: a title over the lines of a row or a part.
func boldLabel(text string) *widget.Label {
	return widget.NewLabelWithStyle(text, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
}

// sectionTitle is the title of a section of the models window: a model group, Downloads, the
// files the scan could not use.
func sectionTitle(text string) *widget.Label {
	l := boldLabel(text)
	l.SizeName = theme.SizeNameSubHeadingText
	return l
}

// tinted gives l the importance imp (its colour) and returns it.
func tinted(l *widget.Label, imp widget.Importance) *widget.Label {
	l.Importance = imp
	return l
}

// captionLabel is a wrapping label in the caption size: a line of detail or a note under another.
func captionLabel(text string) *widget.Label {
	l := wrapLabel(text)
	l.SizeName = theme.SizeNameCaptionText
	return l
}

// fillEntry shows text in e, with hint as its placeholder; changed, when not nil, is called on
// every edit after (not on this text).
func fillEntry(e *widget.Entry, text, hint string, changed func()) *widget.Entry {
	e.SetText(text)
	e.SetPlaceHolder(hint)
	if changed != nil {
		e.OnChanged = func(string) { changed() }
	}
	return e
}

func showIf(o fyne.CanvasObject, on bool) {
	if on {
		o.Show()
	} else {
		o.Hide()
	}
}

func enableIf(d fyne.Disableable, on bool) {
	if on {
		d.Enable()
	} else {
		d.Disable()
	}
}
