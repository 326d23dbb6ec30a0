package app

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// rowObject draws one model row: name and state, details, why it failed, load progress, and its
// buttons with a "more" menu.
func (m *modelsWindow) rowObject(r rowView) fyne.CanvasObject {
	return container.NewBorder(nil, nil, nil, m.rowButtons(r), rowText(r))
}

// rowText is a row's left side: its title and state, its detail, why its size is a guess, why it
// waits or failed, and its load's progress.
func rowText(r rowView) *fyne.Container {
	title := boldLabel(r.Title)
	state := widget.NewLabel(r.State)
	switch {
	case r.Failed:
		state.Importance = widget.DangerImportance
	case r.Loading || r.Draining || r.Wait != "" || r.Group == GroupLoaded && r.State == "stopping":
		state.Importance = widget.WarningImportance
	case r.Group == GroupLoaded:
		state.Importance = widget.SuccessImportance
	}
	detail := captionLabel(r.Detail)
	left := container.NewVBox(container.NewHBox(title, state), detail)
	if r.Unsized != "" {
		left.Add(tinted(captionLabel(r.Unsized), widget.WarningImportance))
	}
	if r.Wait != "" {
		left.Add(tinted(wrapLabel(r.Wait), widget.WarningImportance))
	}
	if r.Error != "" {
		left.Add(tinted(wrapLabel(r.Error), widget.DangerImportance))
	}
	if r.Loading {
		if r.Progress >= 0 {
			p := widget.NewProgressBar()
			p.SetValue(r.Progress)
			left.Add(p)
		} else {
			left.Add(widget.NewProgressBarInfinite())
		}
	}
	return left
}

// rowButtons are a row's buttons, the first the most important, and its "more" menu.
func (m *modelsWindow) rowButtons(r rowView) fyne.CanvasObject {
	var buttons []fyne.CanvasObject
	for i, b := range r.Buttons {
		btn := widget.NewButton(b.Label, m.rowTap(r, b.Action))
		if i == 0 {
			btn.Importance = widget.HighImportance
		}
		if b.Disabled {
			btn.Disable()
		}
		buttons = append(buttons, btn)
	}
	var more *widget.Button
	more = widget.NewButtonWithIcon("", theme.MoreHorizontalIcon(), func() {
		items := make([]*fyne.MenuItem, 0, len(r.More))
		for _, b := range r.More {
			it := fyne.NewMenuItem(b.Label, m.rowTap(r, b.Action))
			it.Disabled = b.Disabled
			items = append(items, it)
		}
		c := fyne.CurrentApp().Driver().CanvasForObject(more)
		pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(more).AddXY(0, more.Size().Height)
		widget.ShowPopUpMenuAtPosition(fyne.NewMenu("", items...), c, pos)
	})
	buttons = append(buttons, more)
	return container.NewVBox(container.NewHBox(buttons...))
}

func (m *modelsWindow) rowTap(r rowView, a rowAction) func() {
	return func() {
		switch a.File {
		case fileReveal:
			m.reveal(r.Path)
		case fileDelete:
			m.confirmDelete(r.ID, r.Path)
		case fileSettings:
			m.u.showModelSettings(r.ID)
		default:
			m.u.do(a.Action)
		}
	}
}

// running reports whether a model has a process, by the last snapshot.
func (m *modelsWindow) running(id string) bool {
	x, ok := m.snap.model(id)
	return ok && x.Running()
}
