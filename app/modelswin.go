package app

import (
	"fmt"
	"image"
	"reflect"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// modelsWindow is the main window: memory, problems, and the models grouped Loaded, Sleeping,
// Available. Its fields are used on the UI thread only.
//
// The window object exists from the start, as Fyne's tray (SetSystemTrayWindow, macOS and Windows) needs it, but its
// content is built when it is first shown: the widgets measure text, which loads Fyne's fonts
// (about 20 MB of heap, 25 MB of RSS) that an app started at login and left in the tray never needs. Fyne creates
// no OpenGL context for a window before its first Show either. Until then the widget fields are nil
// and every method keeps what it would show (snapshot, status, progress) for build.
type modelsWindow struct {
	u       *ui
	win     fyne.Window
	visible bool // shown by show, or by a click on the tray icon; false after hide

	// shownSensor is drawn behind the content: Fyne draws it (and calls its generator) only
	// while the window is mapped, and again after hide refreshes it. A click on the tray icon shows
	// the window through Fyne's driver, not through show; the sensor is how the window learns it.
	shownSensor *canvas.Raster

	// Content, nil until build.
	filter    *widget.Entry
	bar       *memoryBar
	banners   *fyne.Container   // not serving, llama-server missing
	downloads *downloadsSection // pulls running, paused or failed
	machines  *machinesSection  // other machines: peers (machinesui.go)
	list      *fyne.Container   // group headers and rows
	tryIt     *widget.Button    // Try it…, offered only while the router serves
	status    *widget.Label     // progress of adding a model, last result
	progress  *widget.ProgressBar

	snap         Snapshot
	statusText   string    // what status shows; "" hides it
	progressShow bool      // whether progress shows
	progressVal  float64   // progress's value, 0 to 1
	rows         []rowView // what list shows
	listKey      string    // the empty state or filter the list shows when it has no rows
	bannersKey   string
	install      *serverInstall // the Install llama-server panel, nil until first shown
}

// newModelsWindow creates the window without its content, which build makes on the first show.
func newModelsWindow(u *ui) *modelsWindow {
	m := &modelsWindow{u: u, win: u.newWindow("Llamatray", fyne.NewSize(920, 640))}
	m.win.SetCloseIntercept(u.closeModels)
	m.win.SetOnDropped(func(_ fyne.Position, uris []fyne.URI) { m.dropped(uris) })
	m.shownSensor = canvas.NewRaster(m.drawn)
	m.win.SetContent(m.shownSensor) // a raster has no minimum size to measure: no fonts load
	return m
}

func (m *modelsWindow) built() bool { return m.list != nil }

// build makes the content, with the status and progress set before it existed.
func (m *modelsWindow) build() {
	m.filter = widget.NewEntry()
	m.filter.SetPlaceHolder("Filter models")
	m.filter.OnChanged = func(string) { m.update(m.snap) }
	add := widget.NewButtonWithIcon("Add model…", theme.ContentAddIcon(), m.addModel)
	settings := widget.NewButtonWithIcon("Settings…", theme.SettingsIcon(), m.u.showSettings)
	m.tryIt = widget.NewButtonWithIcon("Try it…", theme.MailComposeIcon(), func() { m.u.showTryIt("") })
	objs := []fyne.CanvasObject{}
	if get := m.u.getModelsButton(); get != nil {
		objs = append(objs, get)
	}
	objs = append(objs, m.tryIt)
	if m.u.b.Offers().Activity {
		objs = append(objs, widget.NewButtonWithIcon("Activity…", theme.HistoryIcon(), m.u.showActivity))
	}
	toolbar := container.NewBorder(nil, nil, nil, container.NewHBox(append(objs, add, settings)...), m.filter)

	m.bar = newMemoryBar()
	m.banners = container.NewVBox()
	m.list = container.NewVBox()
	m.status = wrapLabel("")
	m.progress = widget.NewProgressBar()
	m.setStatus(m.statusText)
	m.setProgress(m.progressShow, m.progressVal)

	// The models come first, under the toolbar and whatever needs attention; downloads and the other
	// machines follow them (each takes no room without something to show, the machines fold away),
	// and memory is the bottom line.
	m.downloads = newDownloadsSection(m.u)
	m.machines = newMachinesSection(m.u, m.win)
	top := container.NewVBox(toolbar, m.banners, m.status, m.progress)
	models := container.NewVBox(m.list, m.downloads.box, m.machines.fold)
	bottom := container.NewVBox(widget.NewSeparator(), memoryBox(m.bar))
	body := container.NewBorder(top, bottom, nil, nil, container.NewVScroll(models))
	m.win.SetContent(container.NewStack(m.shownSensor, body))
}

func (m *modelsWindow) show() {
	m.opened()
	raise(m.win)
}

// opened makes the window's state that of a shown window: content built and up to date.
func (m *modelsWindow) opened() {
	if !m.built() {
		m.build()
	}
	m.visible = true
	m.update(m.u.snap)
	m.u.refresh.Kick()
}

// drawn is shownSensor's generator, called by Fyne's painter (on the UI thread) when it draws the
// sensor: the window is mapped. When that was not show's doing, the window catches up, after the
// frame being drawn.
func (m *modelsWindow) drawn(_, _ int) image.Image {
	if !m.visible {
		m.u.onUI(func() {
			if !m.visible {
				m.opened()
			}
		})
	}
	return transparentPixel
}

// transparentPixel is what shownSensor draws, stretched.
var transparentPixel = image.NewNRGBA(image.Rect(0, 0, 1, 1))

// hide is what closing the window does: the app keeps running in the tray.
func (m *modelsWindow) hide() {
	m.visible = false
	m.win.Hide()
	// Its texture is freed before the next frame drawn, so that the next show, whoever does it,
	// calls drawn again.
	m.shownSensor.Refresh()
	m.u.settle()
}

// update shows a snapshot; parts that did not change are left alone.
func (m *modelsWindow) update(s Snapshot) {
	m.snap = s
	if !m.visible || !m.built() {
		return
	}
	m.bar.set(s.Budget)
	m.updateBanners(s)
	showIf(m.tryIt, s.ListenErr == "" && s.ListenAddr != "") // else nothing can be sent: the banner says why
	m.downloads.update(s)
	m.machines.update(s)

	rows := modelRows(s, m.filter.Text, now())
	key := fmt.Sprint(len(s.Models) == 0, s.ModelDirs, s.Scanning, m.filter.Text, s.Skipped) // what shows when there are no rows
	if reflect.DeepEqual(rows, m.rows) && key == m.listKey && len(m.list.Objects) > 0 {
		return
	}
	m.rows, m.listKey = rows, key
	m.list.Objects = append(m.listObjects(s, rows), skippedObjects(s.Skipped)...)
	m.list.Refresh()
}

func (m *modelsWindow) listObjects(s Snapshot, rows []rowView) []fyne.CanvasObject {
	if len(s.Models) == 0 {
		return []fyne.CanvasObject{m.noModels(s)}
	}
	if len(rows) == 0 {
		return []fyne.CanvasObject{widget.NewLabel(fmt.Sprintf("No models match “%s”.", strings.TrimSpace(m.filter.Text)))}
	}
	var out []fyne.CanvasObject
	var counts [3]int
	for _, r := range rows {
		counts[r.Group]++
	}
	last := Group(-1)
	for _, r := range rows {
		if r.Group != last {
			last = r.Group
			h := sectionTitle(fmt.Sprintf("%s (%d)", groupTitles[r.Group], counts[r.Group]))
			out = append(out, h)
		}
		out = append(out, m.rowObject(r), widget.NewSeparator())
	}
	return out
}

// skippedObjects lists, after the models, what the scan could not use and why (a .gguf file it
// could not read, a name taken twice); nothing when the scan used everything.
func skippedObjects(skipped []string) []fyne.CanvasObject {
	if len(skipped) == 0 {
		return nil
	}
	out := []fyne.CanvasObject{sectionTitle(fmt.Sprintf("Not listed (%d)", len(skipped)))}
	for _, w := range skipped {
		out = append(out, tinted(wrapLabel(w), widget.WarningImportance))
	}
	return out
}

// noModels is the empty state: how to add models, and where Llamatray looked.
func (m *modelsWindow) noModels(s Snapshot) fyne.CanvasObject {
	intro := "Add a folder that holds .gguf models, add a model file, or drop a .gguf file on this window."
	// Get models is the first way, and the highlighted one, where the Hub is offered.
	buttons := container.NewHBox()
	if get := m.u.getModelsButton(); get != nil {
		get.Importance = widget.HighImportance
		buttons.Add(get)
		intro = "Get models from the Hugging Face Hub, a" + intro[1:]
	}
	if s.Scanning {
		intro = "Scanning for models…"
	}
	buttons.Add(widget.NewButtonWithIcon("Add folder…", theme.FolderNewIcon(), m.addFolder))
	buttons.Add(widget.NewButtonWithIcon("Add model…", theme.ContentAddIcon(), m.addModel))
	where := "No model folders are set up yet."
	if len(s.ModelDirs) > 0 {
		where = "Folders searched:\n    " + strings.Join(s.ModelDirs, "\n    ")
	}
	body := wrapLabel(intro)
	dirs := wrapLabel(where)
	return widget.NewCard("No models found", "", container.NewVBox(body, buttons, dirs))
}

// serverBanner is the llama-server-not-found banner: one line with Install (where the backend
// installs builds), Look again and Locate…, and under it the build Install picks. Without Install,
// the hint says how to get one.
func (m *modelsWindow) serverBanner(s Snapshot) fyne.CanvasObject {
	locate := widget.NewButtonWithIcon("Locate…", theme.SearchIcon(), m.locateServer)
	again := widget.NewButtonWithIcon("Look again", theme.ViewRefreshIcon(), m.lookAgain)
	p := m.serverInstallPanel()
	if p == nil {
		return notice("llama-server not found",
			"Llamatray runs llama.cpp's llama-server for every model, and none was found. "+s.Server.Hint, again, locate)
	}
	si := m.install
	head := tinted(boldLabel("llama-server not found"), widget.DangerImportance)
	line := container.NewBorder(nil, nil, head, container.NewHBox(si.button, si.stop, again, locate), si.pick)
	return container.NewVBox(line, p)
}

// notice is a compact banner: a bold title, a message and buttons on the right.
func notice(title, text string, buttons ...fyne.CanvasObject) fyne.CanvasObject {
	head := tinted(boldLabel(title), widget.DangerImportance)
	return container.NewBorder(nil, nil, nil, container.NewVBox(buttons...), container.NewVBox(head, wrapLabel(text)))
}

func (m *modelsWindow) updateBanners(s Snapshot) {
	key := fmt.Sprint(s.Server.Path == "", s.Server.Hint, s.ListenErr, s.UpdateURL, m.u.noTray)
	if key == m.bannersKey {
		return
	}
	m.bannersKey = key
	var out []fyne.CanvasObject
	if s.Server.Path == "" {
		out = append(out, m.serverBanner(s))
	}
	if s.ListenErr != "" {
		// The toolbar's Settings… is the way: one button for it is enough.
		out = append(out, notice("Not serving",
			"The router is not listening: "+s.ListenErr+". Choose another port in Settings…; models can still be managed here."))
	}
	if b := m.updateBanner(s); b != nil {
		out = append(out, b)
	}
	if b := m.noTrayBanner(); b != nil {
		out = append(out, b)
	}
	if len(out) > 0 {
		out = append(out, widget.NewSeparator())
	}
	m.banners.Objects = out
	m.banners.Refresh()
}

// showError reports a failed action in a dialog, or as a notification when the window is not shown.
func (m *modelsWindow) showError(what string, err error) {
	if !m.visible {
		m.u.send(fyne.NewNotification(what+" failed", err.Error()))
		return
	}
	dialog.ShowError(fmt.Errorf("%s: %w", what, err), m.win)
}

// setStatus shows a line of progress or result; "" hides it. Before build it is kept for build.
func (m *modelsWindow) setStatus(text string) {
	m.statusText = text
	if !m.built() {
		return
	}
	m.status.SetText(text)
	showIf(m.status, text != "")
}

// setProgress shows or hides the progress bar, at value from 0 to 1. Before build it is kept for
// build.
func (m *modelsWindow) setProgress(show bool, value float64) {
	m.progressShow, m.progressVal = show, value
	if !m.built() {
		return
	}
	m.progress.SetValue(value)
	showIf(m.progress, show)
}
