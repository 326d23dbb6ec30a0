package app

import (
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// windowTools are the models window's buttons for the Try-it and Activity windows.
// Try it… is the first.
func (u *ui) windowTools() []*widget.Button {
	out := []*widget.Button{widget.NewButtonWithIcon("Try it…", theme.MailComposeIcon(), func() { u.showTryIt("") })}
	if u.b.Offers().Activity {
		out = append(out, widget.NewButtonWithIcon("Activity…", theme.HistoryIcon(), u.showActivity))
	}
	return out
}

// applyWindows hands a snapshot to the open Try-it and model settings windows.
func (u *ui) applyWindows(s Snapshot) {
	if u.tryIt != nil {
		u.tryIt.update(s)
	}
	if u.getModels != nil {
		u.getModels.downloads.update(s)
	}
}

// extraWindowShown reports whether a Try-it window is open, which follows the models' state.
func (u *ui) extraWindowShown() bool { return u.tryIt != nil || len(u.modelSettings) > 0 }
