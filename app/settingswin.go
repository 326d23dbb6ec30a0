package app

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/config"
)

// settingsWindow edits the configuration: validated, saved to the config file and applied live.
// Its fields are used on the UI thread only.
type settingsWindow struct {
	u   *ui
	win fyne.Window

	dirs      []string
	dirList   *fyne.Container
	scanDefs  *widget.Check
	entries   map[string]*widget.Entry // by settings key
	errLabels map[string]*widget.Label // inline error under each field, by key
	autostart *widget.Check
	ollama    *widget.Check
	ollamaIn  *widget.Label // whether Ollama's port answers, or why not
	serverIn  *widget.Label // which llama-server is in use
	general   *widget.Label // problems not tied to one field; the save result
	token     *tokenField   // the Hugging Face token, last in the form; nil without a Hub
	scroll    *container.Scroll
	save      *widget.Button
}

func (u *ui) showSettings() {
	if u.settings != nil {
		raise(u.settings.win)
		return
	}
	s := newSettingsWindow(u)
	u.settings = s
	s.win.SetOnClosed(func() { u.settings = nil; u.settle() })
	s.win.Show()
}

// showHubToken opens Settings at the Hugging Face token field (the form's last), with the cursor in it.
func (u *ui) showHubToken() {
	u.showSettings()
	if s := u.settings; s.token != nil {
		s.scroll.ScrollToBottom()
		s.win.Canvas().Focus(s.token.entry)
	}
}

func newSettingsWindow(u *ui) *settingsWindow {
	s := &settingsWindow{
		u:         u,
		win:       u.newWindow("Llamatray Settings", fyne.Size{}),
		entries:   map[string]*widget.Entry{},
		errLabels: map[string]*widget.Label{},
	}
	s.scroll = container.NewVScroll(container.NewPadded(s.form(valuesFrom(u.b.Config(), u.snap.Autostart))))
	s.win.SetContent(container.NewBorder(nil, s.buttons(), nil, nil, s.scroll))
	s.win.Resize(fyne.NewSize(720, 720))
	s.update(u.snap)
	return s
}

// form is the settings' form, filled from v.
func (s *settingsWindow) form(v settingsValues) *widget.Form {
	s.dirs = v.ModelDirs
	s.dirList = container.NewVBox()
	s.scanDefs = widget.NewCheck("Also scan the usual model folders (Hugging Face, LM Studio, llama.cpp caches)", nil)
	s.scanDefs.SetChecked(v.ScanDefaultDirs)
	s.refreshDirs()
	addDir := widget.NewButtonWithIcon("Add folder…", theme.FolderNewIcon(), s.addDir)

	serverField := s.field(keyLlamaServer, v.LlamaServer, "found automatically")
	browse := widget.NewButton("Browse…", s.browse(keyLlamaServer))
	s.serverIn = captionLabel("")
	s.autostart = widget.NewCheck("Start Llamatray when I log in", nil)
	s.autostart.SetChecked(v.Autostart)
	s.ollama = widget.NewCheck("Also answer on Ollama's port, 11434, for apps set up for Ollama", nil)
	s.ollama.SetChecked(v.OllamaPort)
	s.ollamaIn = captionLabel("")

	form := widget.NewForm(
		widget.NewFormItem("Model folders", container.NewVBox(s.dirList, container.NewHBox(addDir), s.scanDefs)),
		hinted("Port", s.field(keyListen, v.Port, "8080"), "The OpenAI-compatible endpoint is http://127.0.0.1:PORT/v1"),
		hinted("Memory limit", s.field(keyMemoryLimit, v.MemoryLimit, "automatic"), "Memory models may use, like 24GiB; empty = derived from this machine"),
		hinted("Memory reserve", s.field(keyMemoryReserve, v.MemoryReserve, "1GiB"), "Kept free for everything else"),
		hinted("Max loaded models", s.field(keyMaxLoaded, v.MaxLoaded, "0"), "0 = no limit"),
		hinted("Sleep when idle", s.field(keyIdleSleep, v.IdleSleep, "5m"), "llama-server frees its memory after this long without requests; 0 = never"),
		hinted("Unload when idle", s.field(keyIdleUnload, v.IdleUnload, "30m"), "Stop the model after this long without requests; 0 = never"),
		hinted("Queue timeout", s.field(keyQueueTimeout, v.QueueTimeout, "2m"), "How long a request waits for memory or a slot; -1 = no limit"),
		widget.NewFormItem("llama-server", container.NewVBox(container.NewBorder(nil, nil, nil, browse, serverField), s.serverIn)),
		hinted("Presets", container.NewBorder(nil, nil, nil, widget.NewButton("Browse…", s.browse(keyPresets)), s.field(keyPresets, v.Presets, "none")),
			"llama.cpp's router preset file (INI, a section per model), read in place"),
		hinted("Context size", s.field(keyCtxSize, v.CtxSize, "4096"), "Default for every model, in tokens; 0 = the model's trained context"),
		hinted("GPU layers", s.field(keyGPULayers, v.GPULayers, "llama-server default"), "Layers offloaded to the GPU: a number, \"all\", or empty for llama-server's default"),
		widget.NewFormItem("Ollama apps", container.NewVBox(s.ollama, s.ollamaIn)),
		widget.NewFormItem("Login", s.autostart),
	)
	if s.token = newTokenField(s.u); s.token != nil {
		form.AppendItem(s.token.item())
	}
	return form
}

// buttons are the line for problems not tied to a field, Import, Close and Save.
func (s *settingsWindow) buttons() fyne.CanvasObject {
	s.general = wrapLabel("")
	s.general.Hide()
	s.save = widget.NewButtonWithIcon("Save", theme.DocumentSaveIcon(), s.submit)
	s.save.Importance = widget.HighImportance
	closeBtn := widget.NewButton("Close", func() { s.win.Close() })
	importBtn := widget.NewButtonWithIcon("Import llama-swap config…", theme.DownloadIcon(), s.chooseLlamaSwap)
	return container.NewVBox(s.general, container.NewHBox(importBtn, layout.NewSpacer(), closeBtn, s.save))
}

// field is a text field for the settings key, with its inline error under it.
func (s *settingsWindow) field(key, text, placeholder string) fyne.CanvasObject {
	e := fillEntry(widget.NewEntry(), text, placeholder, nil)
	l := tinted(wrapLabel(""), widget.DangerImportance)
	l.Hide()
	s.entries[key], s.errLabels[key] = e, l
	return container.NewVBox(e, l)
}

func hinted(label string, obj fyne.CanvasObject, hint string) *widget.FormItem {
	it := widget.NewFormItem(label, obj)
	it.HintText = hint
	return it
}

// update shows which llama-server is in use and whether Ollama's port answers. Edits in progress
// are left alone.
func (s *settingsWindow) update(snap Snapshot) {
	s.ollamaIn.Importance = widget.MediumImportance
	switch {
	case snap.OllamaErr != "":
		s.ollamaIn.Importance = widget.DangerImportance
		s.ollamaIn.SetText(snap.OllamaErr)
	case snap.OllamaAddr != "":
		s.ollamaIn.SetText("Answering on http://" + snap.OllamaAddr + " too. Ollama's API is also at " + "http://" + snap.ListenAddr + ".")
	default:
		s.ollamaIn.SetText("Ollama's API is at http://" + snap.ListenAddr + "; point an Ollama app there, or turn this on.")
	}
	text := "None found. " + snap.Server.Hint
	if snap.Server.Path != "" {
		text = "In use: " + snap.Server.Path
		if snap.Server.Version != "" {
			text += " (" + snap.Server.Version + ")"
		}
		if snap.Server.Source != "" {
			text += ", found via " + snap.Server.Source
		}
	}
	s.serverIn.SetText(text)
}

func (s *settingsWindow) refreshDirs() {
	var rows []fyne.CanvasObject
	if len(s.dirs) == 0 {
		rows = append(rows, widget.NewLabel("No folders of your own yet."))
	}
	for i, d := range s.dirs {
		rm := widget.NewButtonWithIcon("", theme.DeleteIcon(), func() {
			s.dirs = append(s.dirs[:i:i], s.dirs[i+1:]...)
			s.refreshDirs()
		})
		rows = append(rows, container.NewBorder(nil, nil, nil, rm, widget.NewLabel(d)))
	}
	s.dirList.Objects = rows
	s.dirList.Refresh()
}

func (s *settingsWindow) addDir() {
	dialog.ShowFolderOpen(func(dir fyne.ListableURI, err error) {
		if err != nil || dir == nil {
			return
		}
		if slices.Contains(s.dirs, dir.Path()) {
			return
		}
		s.dirs = append(s.dirs, dir.Path())
		s.refreshDirs()
	}, s.win)
}

// browse returns a button's action that puts the path of a chosen file into the field of key.
func (s *settingsWindow) browse(key string) func() {
	return func() { openFile(s.win, nil, s.entries[key].SetText, nil) }
}

func (s *settingsWindow) values() settingsValues {
	t := func(k string) string { return s.entries[k].Text } // the inverse of fieldTexts
	return settingsValues{
		ModelDirs: append([]string(nil), s.dirs...), ScanDefaultDirs: s.scanDefs.Checked,
		Port: t(keyListen), MemoryLimit: t(keyMemoryLimit), MemoryReserve: t(keyMemoryReserve),
		MaxLoaded: t(keyMaxLoaded), IdleSleep: t(keyIdleSleep), IdleUnload: t(keyIdleUnload),
		QueueTimeout: t(keyQueueTimeout), LlamaServer: t(keyLlamaServer), Presets: t(keyPresets), CtxSize: t(keyCtxSize),
		GPULayers: t(keyGPULayers), Autostart: s.autostart.Checked, OllamaPort: s.ollama.Checked,
	}
}

// showErrors puts each problem under its field; the rest go to the general line.
func (s *settingsWindow) showErrors(byKey map[string]error, other []error) {
	for k, l := range s.errLabels {
		if err := byKey[k]; err != nil {
			l.SetText(err.Error())
			l.Show()
		} else {
			l.SetText("")
			l.Hide()
		}
	}
	if byKey[keyModelDirs] != nil {
		other = append(other, fmt.Errorf("model folders: %w", byKey[keyModelDirs]))
	}
	var lines []string
	for _, e := range other {
		lines = append(lines, e.Error())
	}
	s.setGeneral(strings.Join(lines, "\n"), len(lines) > 0)
}

func (s *settingsWindow) setGeneral(text string, bad bool) {
	s.general.SetText(text)
	s.general.Importance = widget.MediumImportance
	if bad {
		s.general.Importance = widget.DangerImportance
	}
	showIf(s.general, text != "")
	s.general.Refresh()
}

// shownKeys are the settings keys the window has a place for.
func (s *settingsWindow) shownKeys() map[string]bool {
	m := map[string]bool{keyModelDirs: true}
	for k := range s.entries {
		m[k] = true
	}
	return m
}

// submit validates; when everything is right it saves and applies off the UI thread.
func (s *settingsWindow) submit() {
	v := s.values()
	cfg, parseErrs := v.apply(s.u.b.Config())
	if parseErrs != nil {
		s.showErrors(parseErrs, nil)
		return
	}
	if err := cfg.Validate(); err != nil {
		s.showErrors(fieldErrors(err, s.shownKeys()))
		return
	}
	s.showErrors(nil, nil)
	s.setGeneral("Saving…", false)
	s.save.Disable()
	autostartChanged := v.Autostart != s.u.snap.Autostart
	var running []string
	for _, m := range s.u.snap.Models {
		if m.Running() {
			running = append(running, m.ID)
		}
	}
	pending := notAppliedToRunning(valuesFrom(s.u.b.Config(), s.u.snap.Autostart), v, running)
	go func() {
		// The window's values go over the configuration in force when the edit is made, so that a
		// pin or an alias made since the window read it is kept.
		err := s.u.b.EditConfig(func(c *config.Config) error {
			next, parseErrs := v.apply(*c)
			if parseErrs != nil {
				return fmt.Errorf("settings: %w", errors.Join(slices.Collect(maps.Values(parseErrs))...))
			}
			*c = next
			return nil
		})
		var autoErr error
		if err == nil && autostartChanged {
			autoErr = s.u.auto.set(v.Autostart)
		}
		s.u.refresh.Kick()
		s.u.onUI(func() { s.saved(err, autoErr, pending) })
	}()
}

// saved shows the result of a save.
// pending says what the running models do not take yet (notAppliedToRunning), "" when nothing.
func (s *settingsWindow) saved(err, autoErr error, pending string) {
	s.save.Enable()
	if err != nil {
		s.showErrors(fieldErrors(err, s.shownKeys()))
		return
	}
	if autoErr != nil {
		s.setGeneral("Saved and applied, but start at login could not be changed: "+autoErr.Error(), true)
		return
	}
	if pending != "" {
		s.setGeneral("Saved. "+pending, false)
		return
	}
	s.setGeneral("Saved and applied.", false)
}
