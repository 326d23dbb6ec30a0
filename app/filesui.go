package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/app/platform"
	"github.com/llamatray/llamatray/router/config"
)

// The choices offered when adding a model file.
const (
	importLinkLabel = "Link it (instant, no extra disk space; keep the original file)"
	importCopyLabel = "Copy it (the original can be deleted afterwards)"
)

func (m *modelsWindow) addModel() {
	openFile(m.win, []string{".gguf", ".GGUF"}, func(path string) { m.askImport([]string{path}) },
		func(err error) { m.showError("Add model", err) })
}

// dropped adds the .gguf files dropped on the window.
func (m *modelsWindow) dropped(uris []fyne.URI) {
	var paths, skipped []string
	for _, u := range uris {
		if u.Scheme() != "file" {
			continue
		}
		if strings.EqualFold(filepath.Ext(u.Path()), ".gguf") {
			paths = append(paths, u.Path())
		} else {
			skipped = append(skipped, filepath.Base(u.Path()))
		}
	}
	if len(paths) == 0 {
		if len(skipped) > 0 {
			m.showError("Add model", fmt.Errorf("only .gguf model files can be added; not %s", strings.Join(skipped, ", ")))
		}
		return
	}
	m.askImport(paths)
}

// askImport asks whether to link or copy, then adds the files.
func (m *modelsWindow) askImport(paths []string) {
	dir, err := m.u.b.ModelsDir()
	if err != nil {
		m.showError("Add model", err)
		return
	}
	choice := widget.NewRadioGroup([]string{importLinkLabel, importCopyLabel}, nil)
	choice.SetSelected(importLinkLabel)
	choice.Required = true
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = filepath.Base(p)
	}
	text := wrapLabel(fmt.Sprintf("Add %s to %s?", strings.Join(names, ", "), dir))
	d := dialog.NewCustomConfirm("Add model", "Add", "Cancel", widget.NewForm(
		widget.NewFormItem("", text), widget.NewFormItem("", choice)), func(ok bool) {
		if !ok {
			return
		}
		mode := ImportLink
		if choice.Selected == importCopyLabel {
			mode = ImportCopy
		}
		m.importFiles(paths, dir, mode)
	}, m.win)
	d.Resize(fyne.NewSize(560, 260))
	d.Show()
}

// importFiles links or copies the files into dir off the UI thread, showing progress, then rescans.
func (m *modelsWindow) importFiles(paths []string, dir string, mode ImportMode) {
	m.setProgress(true, 0)
	m.setStatus("Adding " + filepath.Base(paths[0]) + "…")
	go func() {
		var added []string
		var errs []error
		for _, p := range paths {
			name := filepath.Base(p)
			lastPct := -1
			_, err := ImportModel(context.Background(), p, dir, mode, func(done, total int64) {
				pct := 100
				if total > 0 {
					pct = int(done * 100 / total)
				}
				if pct == lastPct {
					return
				}
				lastPct = pct
				m.u.onUI(func() {
					m.setProgress(true, float64(pct)/100)
					m.setStatus(fmt.Sprintf("Copying %s… %s of %s", name, humanBytes(done), humanBytes(total)))
				})
			})
			if err != nil {
				errs = append(errs, err)
				continue
			}
			added = append(added, name)
		}
		if len(added) > 0 {
			if err := m.u.b.Rescan(context.Background()); err != nil {
				errs = append(errs, err)
			}
		}
		m.u.refresh.Kick()
		m.u.onUI(func() {
			m.setProgress(false, 0)
			m.setStatus("")
			if len(added) > 0 {
				m.setStatus("Added " + strings.Join(added, ", ") + ".")
			}
			if err := errors.Join(errs...); err != nil {
				m.showError("Add model", err)
			}
		})
	}()
}

// addFolder picks a folder and adds it to the model folders.
func (m *modelsWindow) addFolder() {
	dialog.ShowFolderOpen(func(dir fyne.ListableURI, err error) {
		if err != nil {
			m.showError("Add folder", err)
			return
		}
		if dir == nil {
			return
		}
		path := dir.Path()
		m.u.background("Add folder", func() error {
			if slices.Contains(m.u.b.Config().ModelDirs, path) {
				return m.u.b.Rescan(context.Background())
			}
			return m.u.b.EditConfig(func(c *config.Config) error {
				if !slices.Contains(c.ModelDirs, path) {
					c.ModelDirs = append(c.ModelDirs, path)
				}
				return nil
			})
		})
	}, m.win)
}

// locateServer picks a llama-server binary and saves it in the configuration.
func (m *modelsWindow) locateServer() {
	openFile(m.win, nil, func(path string) {
		m.u.background("Use "+path, func() error {
			return m.u.b.EditConfig(func(c *config.Config) error {
				c.LlamaServer = path
				return nil
			})
		})
	}, func(err error) { m.showError("Locate llama-server", err) })
}

// reveal shows a model file in the file manager.
func (m *modelsWindow) reveal(path string) {
	if path == "" {
		return
	}
	if err := platform.RevealFile(path); err != nil {
		if errors.Is(err, platform.ErrNoReveal) {
			m.u.openFolder(filepath.Dir(path))
			return
		}
		m.showError("Show in folder", err)
	}
}

// confirmDelete asks before moving a model's files to the trash.
func (m *modelsWindow) confirmDelete(id, path string) {
	if m.running(id) {
		dialog.ShowInformation("Model in use", id+" is loaded. Unload it before deleting its files.", m.win)
		return
	}
	files := modelFilesToDelete(path)
	if x, ok := m.snap.model(id); ok && len(x.Entry().Files) > 0 {
		files = x.Entry().Files
	}
	// The button says what happens: to the trash (restorable), or out of the Hub cache for good.
	trash := platform.TrashName()
	msg := fmt.Sprintf("Its files go to the %s, where they can be restored from:\n\n%s", trash, strings.Join(files, "\n"))
	confirm := "Move to " + trash
	done := "Moved " + id + " to the " + trash + "."
	if name, ok := pulledName(m.u.b, id); ok {
		msg = fmt.Sprintf("It was downloaded as %s. Its files leave the Hugging Face cache for good\n(a file another downloaded model shares is kept); Get models… downloads it again.", name)
		confirm = "Delete for good"
		done = "Deleted " + id + " from the Hugging Face cache."
	}
	body := widget.NewLabel(msg)
	dialog.NewCustomConfirm("Delete "+id+"?", confirm, "Cancel", body, func(ok bool) {
		if !ok {
			return
		}
		m.u.background("Delete "+id, func() error {
			if err := deleteModel(m.u.b, id, path, m.u.trash); err != nil {
				return err
			}
			m.u.onUI(func() { m.setStatus(done) })
			return nil
		})
	}, m.win).Show()
}

// pulledName is the ORG/REPO:QUANT a model was pulled from the Hub as; false for a user's own file.
func pulledName(b Backend, id string) (string, bool) {
	if !b.Offers().Hub {
		return "", false
	}
	return b.Pulled(id)
}

// deleteModel deletes a model's files and rescans: a model pulled from the Hub leaves the Hub
// cache as with `llamatray rm` (its blobs freed, not only its snapshot link), any other model's
// files go to the trash. It is refused while the model runs, checked against the engine at the
// moment of deletion.
func deleteModel(b Backend, id, path string, trash func(string) error) error {
	files := modelFilesToDelete(path)
	if x, ok := b.Snapshot().model(id); ok {
		if x.Running() {
			return fmt.Errorf("%s is %s; unload it before deleting its files", id, x.State)
		}
		if len(x.Entry().Files) > 0 {
			files = x.Entry().Files
		}
	}
	if _, ok := pulledName(b, id); ok {
		if _, err := b.RemovePulled(id); err != nil {
			return err
		}
		return b.Rescan(context.Background())
	}
	if len(files) == 0 {
		return fmt.Errorf("%s: no files found at %s", id, path)
	}
	for _, f := range files {
		if err := trash(f); err != nil {
			return err
		}
	}
	return b.Rescan(context.Background())
}
