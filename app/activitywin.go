package app

import (
	"fmt"
	"image"
	"image/color"
	"math"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/wire"
)

// activityEvery is how often an open Activity window reads the activity again.
const activityEvery = 2 * time.Second

// activityWindow shows, per model, the last hour as a small chart and its numbers. Its fields are
// used on the UI thread only; it reads the activity on a ticker only while it is open.
type activityWindow struct {
	u    *ui
	win  fyne.Window
	list *fyne.Container
	stop chan struct{} // closed when the window closes
	key  string        // what list shows, to skip a rebuild when nothing changed
}

func (u *ui) showActivity() {
	if !u.b.Offers().Activity {
		return
	}
	if u.activity != nil {
		raise(u.activity.win)
		return
	}
	a := &activityWindow{u: u, win: u.newWindow("Activity", fyne.NewSize(760, 520)), list: container.NewVBox(), stop: make(chan struct{})}
	intro := wrapLabel("The last hour of requests per model. Times and token counts come from llama-server's own timings; no prompt or answer text is kept.")
	a.win.SetContent(container.NewBorder(intro, nil, nil, nil, container.NewVScroll(a.list)))
	a.win.SetOnClosed(func() {
		close(a.stop)
		u.activity = nil
	})
	u.activity = a
	a.show(u.b.Activity())
	a.win.Show()
	go pollUntil(u, a.stop, activityEvery, u.b.Activity, a.show)
}

// pollUntil reads every interval, off the UI thread, and hands what it read to show on the UI
// thread, until stop is closed: what an open window follows that sends no events.
func pollUntil[T any](u *ui, stop <-chan struct{}, every time.Duration, read func() T, show func(T)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			v := read()
			u.onUI(func() { show(v) })
		}
	}
}

// show draws doc: one card per model, or a line saying nothing happened.
func (a *activityWindow) show(doc wire.Activity) {
	key := fmt.Sprint(doc.Since, doc.Models)
	if key == a.key {
		return
	}
	a.key = key
	if len(doc.Models) == 0 {
		a.list.Objects = []fyne.CanvasObject{widget.NewLabel("No requests in the last hour.")}
		a.list.Refresh()
		return
	}
	var out []fyne.CanvasObject
	for _, m := range doc.Models {
		head := boldLabel(m.Model)
		nums := wrapLabel(activityLine(m.Total))
		chart := newActivityChart(m.Buckets)
		caption := widget.NewLabel(chartCaption(m.Buckets, doc.BucketSeconds))
		caption.SizeName = theme.SizeNameCaptionText
		out = append(out, head, nums, chart, caption, widget.NewSeparator())
	}
	a.list.Objects = out
	a.list.Refresh()
}

// activityLine says what a model's requests did: "12 requests (1 failed) · 340 tokens in, 1204
// out · first token 420 ms · 38.5 tokens/s · waited 12 ms on average, at most 1.2 s".
func activityLine(s wire.ActivityStats) string {
	parts := []string{plural(s.Requests, "request")}
	if s.Errors > 0 {
		parts[0] += fmt.Sprintf(" (%d failed)", s.Errors)
	}
	parts = append(parts, fmt.Sprintf("%d tokens in, %d out", s.TokensIn, s.TokensOut))
	if s.TTFTMs > 0 {
		parts = append(parts, "first token "+millis(s.TTFTMs))
	}
	if s.TokensPerSecond > 0 {
		parts = append(parts, fmt.Sprintf("%.1f tokens/s", s.TokensPerSecond))
	}
	if s.DraftTokens > 0 {
		parts = append(parts, fmt.Sprintf("draft accepted %.0f%% (%d of %d)", 100*s.DraftAcceptance, s.DraftAccepted, s.DraftTokens))
	}
	parts = append(parts, fmt.Sprintf("waited %s on average, at most %s", millis(s.QueueWaitMs), millis(s.MaxQueueWaitMs)))
	return strings.Join(parts, " · ")
}

// millis formats a time in milliseconds: "12 ms", "1.2 s".
func millis(ms float64) string {
	if ms < 1000 {
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.1f s", ms/1000)
}

// chartCaption explains the chart's bars and their scale.
func chartCaption(b []wire.ActivityStats, bucketSeconds int) string {
	peak := int64(0)
	for _, s := range b {
		peak = max(peak, s.TokensOut)
	}
	width := (time.Duration(bucketSeconds) * time.Second).String()
	if bucketSeconds == 60 {
		width = "minute"
	}
	return fmt.Sprintf("Tokens generated per %s over the last hour, now at the right, a line every 15 min (highest bar %d); red: failed requests.", width, peak)
}

// newActivityChart draws one bar per bucket: its generated tokens, scaled to the highest bar, with
// a red cap where requests failed and a thin bar where requests generated nothing.
func newActivityChart(b []wire.ActivityStats) fyne.CanvasObject {
	buckets := append([]wire.ActivityStats(nil), b...)
	bar := theme.Color(theme.ColorNamePrimary)
	bad := theme.Color(theme.ColorNameError)
	grid := theme.Color(theme.ColorNameSeparator)
	back := theme.Color(theme.ColorNameInputBackground)
	r := canvas.NewRaster(func(w, h int) image.Image { return drawActivity(buckets, w, h, back, bar, bad, grid) })
	r.SetMinSize(fyne.NewSize(480, 64))
	return r
}

// drawActivity paints the chart into a w×h image.
func drawActivity(b []wire.ActivityStats, w, h int, back, bar, bad, grid color.Color) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	if w <= 0 || h <= 0 || len(b) == 0 {
		return img
	}
	fill := func(x0, y0, x1, y1 int, c color.Color) {
		for y := max(y0, 0); y < min(y1, h); y++ {
			for x := max(x0, 0); x < min(x1, w); x++ {
				img.Set(x, y, c)
			}
		}
	}
	fill(0, 0, w, h, back)
	fill(0, h-1, w, h, grid) // base line
	for q := 1; q < 4; q++ { // quarter-hour marks
		x := w * q / 4
		fill(x, 0, x+1, h, grid)
	}
	peak := int64(0)
	for _, s := range b {
		peak = max(peak, s.TokensOut)
	}
	slot := float64(w) / float64(len(b))
	for i, s := range b {
		if s.Requests == 0 {
			continue
		}
		x0 := int(math.Round(float64(i) * slot))
		x1 := max(int(math.Round(float64(i+1)*slot))-1, x0+1)
		height := 2 // requests that generated nothing still show
		if peak > 0 {
			height = max(height, int(float64(h-1)*float64(s.TokensOut)/float64(peak)))
		}
		fill(x0, h-1-height, x1, h-1, bar)
		if s.Errors > 0 {
			fill(x0, h-1-height, x1, h-1-height+max(2, height*s.Errors/max(s.Requests, 1)), bad)
		}
	}
	return img
}
