package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/hub"
)

// downloadsSection is the models window's Downloads part: every pull running, paused or failed
// (partials from an earlier run too), with its progress, speed and time left, and Pause, Resume
// and Cancel. It is empty, and takes no room, when there is none.
type downloadsSection struct {
	u   *ui
	box *fyne.Container
	key string // what is shown, to leave an unchanged section alone
}

func newDownloadsSection(u *ui) *downloadsSection {
	return &downloadsSection{u: u, box: container.NewVBox()}
}

// update shows s's downloads.
func (d *downloadsSection) update(s Snapshot) {
	key := fmt.Sprint(s.Downloads)
	if key == d.key {
		return
	}
	d.key = key
	if !d.u.b.Offers().Hub || len(s.Downloads) == 0 {
		d.box.Objects = nil
		d.box.Refresh()
		return
	}
	h := d.u.b
	objs := []fyne.CanvasObject{widget.NewLabelWithStyle("Downloads", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})}
	for _, dl := range s.Downloads {
		objs = append(objs, d.row(h, dl))
	}
	d.box.Objects = append(objs, widget.NewSeparator())
	d.box.Refresh()
}

// row is one download: its name and state in words, a bar, and what can be done.
func (d *downloadsSection) row(h Backend, dl Download) fyne.CanvasObject {
	name := dl.Model
	bar := widget.NewProgressBar()
	if dl.Total > 0 {
		bar.SetValue(float64(dl.Done) / float64(dl.Total))
	}
	line := widget.NewLabel(downloadText(dl))
	line.Wrapping = fyne.TextWrapWord
	var buttons []fyne.CanvasObject
	act := func(label string, icon fyne.Resource, what string, fn func() error) {
		b := widget.NewButtonWithIcon(label, icon, nil)
		b.OnTapped = func() {
			b.Disable()
			d.u.background(what+" "+name, fn)
		}
		buttons = append(buttons, b)
	}
	switch dl.State {
	case hub.StateDownloading, "":
		act("Pause", theme.MediaPauseIcon(), "Pause", func() error { h.PausePull(name); return nil })
	case hub.StatePaused, hub.StateFailed:
		label, icon := "Resume", theme.MediaPlayIcon()
		if dl.State == hub.StateFailed {
			label, icon = "Retry", theme.ViewRefreshIcon() // from what came, as Resume does
		}
		act(label, icon, label, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			return h.ResumePull(ctx, name)
		})
	}
	act("Cancel", theme.CancelIcon(), "Cancel", func() error { return h.DiscardPull(name) })
	head := widget.NewLabelWithStyle(name, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	return container.NewBorder(nil, nil, nil, container.NewHBox(buttons...), container.NewVBox(head, bar, line))
}

// downloadText is a download's state in words: "42% of 4.1 GiB · 12 MiB/s · 3 min left".
func downloadText(d Download) string {
	var parts []string
	if d.Total > 0 {
		parts = append(parts, fmt.Sprintf("%d%% of %s", d.Done*100/d.Total, humanBytes(d.Total)))
	}
	switch d.State {
	case hub.StateDownloading, "":
		if d.Rate > 0 {
			parts = append(parts, humanBytes(int64(d.Rate))+"/s")
		}
		if d.Left > 0 {
			parts = append(parts, leftText(d.Left))
		}
		if len(parts) == 0 {
			parts = append(parts, "starting")
		}
	case hub.StatePaused:
		parts = append(parts, "paused: "+humanBytes(d.Done)+" kept on disk; Resume goes on from there")
	case hub.StateFailed:
		parts = append(parts, "failed: "+d.Error+". What came is kept; Retry goes on from there")
	}
	return strings.Join(parts, " · ")
}

// leftText is a time left for people: "40 s left", "3 min left", "2 h 5 min left".
func leftText(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s left", int(d.Seconds()+0.5))
	case d < time.Hour:
		return fmt.Sprintf("%d min left", int(d.Minutes()+0.5))
	}
	return fmt.Sprintf("%d h %d min left", int(d.Hours()), int(d.Minutes())%60)
}
