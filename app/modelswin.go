package app

import (
	"fmt"
	"reflect"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// modelsWindow is the main window: memory, problems, and the models grouped Loaded, Sleeping,
// Available. Its fields are used on the UI thread only.
type modelsWindow struct {
	u       *ui
	win     fyne.Window
	visible bool

	filter   *widget.Entry
	bar      *memoryBar
	banners  *fyne.Container // not serving, llama-server missing
	list     *fyne.Container // group headers and rows
	status   *widget.Label   // progress of adding a model, last result
	progress *widget.ProgressBar

	snap       Snapshot
	rows       []rowView // what list shows
	listKey    string    // the empty state or filter the list shows when it has no rows
	bannersKey string
}

func newModelsWindow(u *ui) *modelsWindow {
	m := &modelsWindow{u: u, win: u.app.NewWindow("Llamatray")}
	m.win.SetIcon(appIcon)
	m.win.Resize(fyne.NewSize(920, 640))
	m.win.SetCloseIntercept(m.hide)
	m.win.SetOnDropped(func(_ fyne.Position, uris []fyne.URI) { m.dropped(uris) })

	m.filter = widget.NewEntry()
	m.filter.SetPlaceHolder("Filter models")
	m.filter.OnChanged = func(string) { m.update(m.snap) }
	add := widget.NewButtonWithIcon("Add model…", theme.ContentAddIcon(), m.addModel)
	settings := widget.NewButtonWithIcon("Settings…", theme.SettingsIcon(), u.showSettings)
	toolbar := container.NewBorder(nil, nil, nil, container.NewHBox(add, settings), m.filter)

	m.bar = newMemoryBar()
	m.banners = container.NewVBox()
	m.list = container.NewVBox()
	m.status = widget.NewLabel("")
	m.status.Wrapping = fyne.TextWrapWord
	m.status.Hide()
	m.progress = widget.NewProgressBar()
	m.progress.Hide()

	top := container.NewVBox(toolbar, m.banners, memoryBox(m.bar), m.status, m.progress, widget.NewSeparator())
	m.win.SetContent(container.NewBorder(top, nil, nil, nil, container.NewVScroll(m.list)))
	return m
}

func (m *modelsWindow) show() {
	m.visible = true
	m.update(m.u.snap)
	m.win.Show()
	m.win.RequestFocus()
	m.u.refresh.Kick()
}

// hide is what closing the window does: the app keeps running in the tray.
func (m *modelsWindow) hide() {
	m.visible = false
	m.win.Hide()
}

// update shows a snapshot; parts that did not change are left alone.
func (m *modelsWindow) update(s Snapshot) {
	m.snap = s
	if !m.visible {
		return
	}
	m.bar.set(s.Budget)
	m.updateBanners(s)

	rows := modelRows(s, m.filter.Text, now())
	key := m.emptyKey(s)
	if reflect.DeepEqual(rows, m.rows) && key == m.listKey && len(m.list.Objects) > 0 {
		return
	}
	m.rows, m.listKey = rows, key
	m.list.Objects = m.listObjects(s, rows)
	m.list.Refresh()
}

// emptyKey identifies what the list shows when there are no rows.
func (m *modelsWindow) emptyKey(s Snapshot) string {
	return fmt.Sprint(len(s.Models) == 0, s.ModelDirs, s.Scanning, m.filter.Text)
}

func (m *modelsWindow) listObjects(s Snapshot, rows []rowView) []fyne.CanvasObject {
	if len(s.Models) == 0 {
		return []fyne.CanvasObject{m.noModels(s)}
	}
	if len(rows) == 0 {
		return []fyne.CanvasObject{widget.NewLabel(fmt.Sprintf("No models match “%s”.", strings.TrimSpace(m.filter.Text)))}
	}
	var out []fyne.CanvasObject
	counts := groupCounts(rows)
	last := Group(-1)
	for _, r := range rows {
		if r.Group != last {
			last = r.Group
			h := widget.NewLabelWithStyle(fmt.Sprintf("%s (%d)", groupTitles[r.Group], counts[r.Group]), fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
			h.SizeName = theme.SizeNameSubHeadingText
			out = append(out, h)
		}
		out = append(out, m.rowObject(r), widget.NewSeparator())
	}
	return out
}

// noModels is the empty state: how to add models, and where Llamatray looked.
func (m *modelsWindow) noModels(s Snapshot) fyne.CanvasObject {
	intro := "Add a folder that holds .gguf models, add a model file, or drop a .gguf file on this window."
	if s.Scanning {
		intro = "Scanning for models…"
	}
	buttons := container.NewHBox(
		widget.NewButtonWithIcon("Add folder…", theme.FolderNewIcon(), m.addFolder),
		widget.NewButtonWithIcon("Add model…", theme.ContentAddIcon(), m.addModel),
	)
	where := "No model folders are set up yet."
	if len(s.ModelDirs) > 0 {
		where = "Folders searched:\n    " + strings.Join(s.ModelDirs, "\n    ")
	}
	body := widget.NewLabel(intro)
	body.Wrapping = fyne.TextWrapWord
	dirs := widget.NewLabel(where)
	dirs.Wrapping = fyne.TextWrapWord
	return widget.NewCard("No models found", "", container.NewVBox(body, buttons, dirs))
}

// notice is a compact banner: a bold title, a message and buttons on the right.
func notice(title, text string, buttons ...fyne.CanvasObject) fyne.CanvasObject {
	head := widget.NewLabelWithStyle(title, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	head.Importance = widget.DangerImportance
	body := widget.NewLabel(text)
	body.Wrapping = fyne.TextWrapWord
	return container.NewBorder(nil, nil, nil, container.NewVBox(buttons...), container.NewVBox(head, body))
}

func (m *modelsWindow) updateBanners(s Snapshot) {
	key := fmt.Sprint(s.ServerPath == "", s.ServerHint, s.ListenErr)
	if key == m.bannersKey {
		return
	}
	m.bannersKey = key
	var out []fyne.CanvasObject
	if s.ServerPath == "" {
		locate := widget.NewButtonWithIcon("Locate…", theme.SearchIcon(), m.locateServer)
		out = append(out, notice("llama-server not found",
			"Llamatray runs llama.cpp's llama-server for every model, and none was found. "+s.ServerHint, locate))
	}
	if s.ListenErr != "" {
		settings := widget.NewButtonWithIcon("Settings…", theme.SettingsIcon(), m.u.showSettings)
		out = append(out, notice("Not serving",
			"The router is not listening: "+s.ListenErr+". Choose another port in Settings; models can still be managed here.", settings))
	}
	if len(out) > 0 {
		out = append(out, widget.NewSeparator())
	}
	m.banners.Objects = out
	m.banners.Refresh()
}

// showError reports a failed action in a dialog.
func (m *modelsWindow) showError(what string, err error) {
	dialog.ShowError(fmt.Errorf("%s: %w", what, err), m.win)
}

// setStatus shows a line of progress or result; "" hides it.
func (m *modelsWindow) setStatus(text string) {
	m.status.SetText(text)
	if text == "" {
		m.status.Hide()
	} else {
		m.status.Show()
	}
}
