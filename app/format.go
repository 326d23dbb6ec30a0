package app

import (
	"fmt"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/view"
)

// humanBytes is the one size format: config.HumanSize ("812 MiB", "4.1 GiB").
var humanBytes = config.HumanSize

// waitText says why the model's queued requests wait, in the words of every surface (view.WaitText),
// "" when none waits or when its own load is what they wait for (its state says "loading 40%").
func waitText(m Model) string {
	if m.Wait == nil || m.Wait.Kind == service.WaitLoading {
		return ""
	}
	return view.WaitText(m.ModelStatus)
}

// ago formats how long ago t was: "just now", "5 min ago", "3 h ago", "2 days ago"; "never" for zero.
func ago(t, at time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := at.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%d days ago", int(d/(24*time.Hour)))
}

// plural returns "1 model", "2 models".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// wrapLabel is a label whose text wraps at word boundaries.
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

// showIf shows o when on, else hides it.
func showIf(o fyne.CanvasObject, on bool) {
	if on {
		o.Show()
	} else {
		o.Hide()
	}
}

// enableIf enables d when on, else disables it.
func enableIf(d fyne.Disableable, on bool) {
	if on {
		d.Enable()
	} else {
		d.Disable()
	}
}
