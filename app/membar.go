package app

import (
	"fmt"
	"image/color"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/service"
)

// memorySegments splits the machine's memory for the bar: held by models, used by everything else,
// free, and the reserve (the part of the free memory Llamatray leaves alone), as fractions of the
// scale, plus where the budget ends. The scale is the system total when known, else the budget.
func memorySegments(b service.Budget) (held, others, free, reserve, limit float64) {
	scale := b.SystemTotal
	if scale <= 0 {
		scale = b.Limit
	}
	if scale <= 0 {
		return 0, 0, 0, 0, 0
	}
	frac := func(n int64) float64 { return min(max(float64(n)/float64(scale), 0), 1) }
	held = frac(b.Used)
	if b.SystemTotal > 0 {
		others = min(frac(b.SystemTotal-b.SystemAvailable-b.Measured), 1-held)
	}
	rest := 1 - held - others
	reserve = min(frac(b.Reserve), rest)
	free = rest - reserve
	limit = frac(b.Limit)
	return
}

func memoryLegend(b service.Budget) string {
	var p []string
	limit := "budget " + humanBytes(b.Limit)
	if !b.Configured {
		limit += " (automatic)"
	}
	p = append(p, fmt.Sprintf("Models reserve %s (%s in use) of the %s", humanBytes(b.Used), humanBytes(b.Measured), limit))
	p = append(p, humanBytes(b.Free)+" free for models")
	if b.SystemTotal > 0 {
		p = append(p, fmt.Sprintf("system: %s available of %s", humanBytes(b.SystemAvailable), humanBytes(b.SystemTotal)))
	}
	if b.Reserve > 0 {
		p = append(p, "reserve "+humanBytes(b.Reserve))
	}
	if b.MaxLoaded > 0 {
		p = append(p, fmt.Sprintf("%d of %d models loaded", b.Loaded, b.MaxLoaded))
	}
	return strings.Join(p, " · ")
}

// memoryBar draws the memory segments and a marker where the budget ends.
type memoryBar struct {
	widget.BaseWidget
	held, others, free, reserve, limit float64
	legend                             *widget.Label
}

func newMemoryBar() *memoryBar {
	// The legend is beside the bar; it wraps where the window is narrow (truncating re-measured the
	// text at each refresh: +6 MB of heap).
	m := &memoryBar{legend: captionLabel("")}
	m.ExtendBaseWidget(m)
	return m
}

// set shows a budget. Call on the UI thread.
func (m *memoryBar) set(b service.Budget) {
	m.held, m.others, m.free, m.reserve, m.limit = memorySegments(b)
	m.legend.SetText(memoryLegend(b))
	m.Refresh()
}

func (m *memoryBar) CreateRenderer() fyne.WidgetRenderer {
	r := &memoryBarRenderer{bar: m}
	r.held = canvas.NewRectangle(theme.Color(theme.ColorNamePrimary))
	r.others = canvas.NewRectangle(theme.Color(theme.ColorNameDisabled))
	r.free = canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground))
	r.reserve = canvas.NewRectangle(reserveColor)
	r.marker = canvas.NewRectangle(theme.Color(theme.ColorNameForeground))
	r.objects = []fyne.CanvasObject{r.free, r.held, r.others, r.reserve, r.marker, m.legend}
	return r
}

type memoryBarRenderer struct {
	bar                                 *memoryBar
	held, others, free, reserve, marker *canvas.Rectangle
	objects                             []fyne.CanvasObject
}

// The bar is memoryBarWidth wide and memoryBarHeight high, its legend on the same line after it.
const (
	memoryBarHeight = 14
	memoryBarWidth  = 220
)

func (r *memoryBarRenderer) Layout(size fyne.Size) {
	w := min(float32(memoryBarWidth), size.Width)
	top := (size.Height - memoryBarHeight) / 2
	x := float32(0)
	place := func(rect *canvas.Rectangle, f float64) {
		width := float32(f) * w
		rect.Move(fyne.NewPos(x, top))
		rect.Resize(fyne.NewSize(width, memoryBarHeight))
		x += width
	}
	place(r.held, r.bar.held)
	place(r.others, r.bar.others)
	place(r.free, r.bar.free)
	place(r.reserve, r.bar.reserve)
	r.marker.Move(fyne.NewPos(float32(r.bar.limit)*w-1, top-3))
	r.marker.Resize(fyne.NewSize(2, memoryBarHeight+6))
	r.marker.Hidden = r.bar.limit <= 0
	r.bar.legend.Move(fyne.NewPos(w, 0))
	r.bar.legend.Resize(fyne.NewSize(size.Width-w, size.Height))
}

func (r *memoryBarRenderer) MinSize() fyne.Size {
	l := r.bar.legend.MinSize()
	return fyne.NewSize(memoryBarWidth+l.Width, max(l.Height, memoryBarHeight+6))
}

func (r *memoryBarRenderer) Refresh() {
	r.held.FillColor = theme.Color(theme.ColorNamePrimary)
	r.others.FillColor = theme.Color(theme.ColorNameDisabled)
	r.free.FillColor = theme.Color(theme.ColorNameInputBackground)
	r.marker.FillColor = theme.Color(theme.ColorNameForeground)
	r.Layout(r.bar.Size())
	for _, o := range r.objects {
		o.Refresh()
	}
}

func (r *memoryBarRenderer) Objects() []fyne.CanvasObject { return r.objects }
func (r *memoryBarRenderer) Destroy()                     {}

// reserveColor marks the reserve on the bar.
var reserveColor = color.NRGBA{R: 0xd4, G: 0xa7, B: 0x2c, A: 0x80}

// memoryBox is the bar on one line, after a heading: the window's bottom line. The legend says
// what the colours are in numbers (models, other programs, free, reserve; the marker is the budget).
func memoryBox(bar *memoryBar) fyne.CanvasObject {
	heading := boldLabel("Memory")
	return container.NewBorder(nil, nil, heading, nil, bar)
}
