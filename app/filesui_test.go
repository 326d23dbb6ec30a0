package app

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/app/platform"
	"github.com/llamatray/llamatray/router/testbed"
)

// overlayTop returns the topmost dialog or popup of a window.
func overlayTop(w fyne.Window) fyne.CanvasObject { return w.Canvas().Overlays().Top() }

func TestDropCopiesModelIntoModelsDir(t *testing.T) {
	u, fb, l := newTestUI(t, windowSnapshot())
	l.wait(func() { u.models = newModelsWindow(u); u.models.show() })
	src := filepath.Join(t.TempDir(), "dropped.gguf")
	writeGGUF(t, src, 3<<20)

	l.wait(func() {
		u.models.dropped([]fyne.URI{storage.NewFileURI(src)})
		top := overlayTop(u.models.win)
		if top == nil {
			t.Fatal("dropping a .gguf asked nothing")
		}
		for _, o := range test.LaidOutObjects(top) {
			if r, ok := o.(*widget.RadioGroup); ok {
				r.SetSelected(importCopyLabel)
			}
		}
		test.Tap(findButton(t, top, "Add"))
	})
	fb.waitCall(t, "rescan")
	testbed.WaitFor(t, 10*time.Second, "the status line", func() bool {
		var text string
		l.wait(func() { text = u.models.status.Text })
		return text == "Added dropped.gguf."
	})
	a, _ := os.Stat(src)
	b, err := os.Stat(filepath.Join(fb.dir, "dropped.gguf"))
	if err != nil {
		t.Fatalf("not in the models folder: %v", err)
	}
	if os.SameFile(a, b) || b.Size() != a.Size() {
		t.Error("Copy was chosen but the file was linked, or the copy is incomplete")
	}
	l.wait(func() {
		if u.models.progress.Visible() {
			t.Error("progress bar still shown after the copy")
		}
	})
}

func TestDeleteThroughConfirmation(t *testing.T) {
	s := windowSnapshot()
	dir := t.TempDir()
	path := filepath.Join(dir, "gemma-2b.gguf")
	writeGGUF(t, path, 64)
	for i := range s.Models {
		if s.Models[i].ID == "gemma-2b" {
			s.Models[i].Path = path
		}
	}
	u, fb, l := newTestUI(t, s)
	trashDir := filepath.Join(dir, "Trash")
	u.trash = func(p string) error { _, err := platform.TrashInto(trashDir, p, time.Now()); return err }
	l.wait(func() { u.models = newModelsWindow(u); u.models.show() })

	// A loaded model is refused before anything is asked.
	l.wait(func() {
		u.models.confirmDelete("qwen-7b", "/models/qwen.gguf")
		if !hasText(overlayTop(u.models.win), "Unload it before deleting its files") {
			t.Errorf("refusal not shown: %q", texts(overlayTop(u.models.win)))
		}
		overlayTop(u.models.win).Hide()
		u.models.win.Canvas().Overlays().Remove(overlayTop(u.models.win))
	})
	l.wait(func() {
		u.models.confirmDelete("gemma-2b", path)
		top := overlayTop(u.models.win)
		if !hasText(top, path) {
			t.Errorf("confirmation does not name the file: %q", texts(top))
		}
		test.Tap(findButtonPrefix(t, top, "Move to "))
	})
	fb.waitCall(t, "rescan")
	if _, err := os.Stat(filepath.Join(trashDir, "files", "gemma-2b.gguf")); err != nil {
		t.Errorf("not in the trash: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("still in place: %v", err)
	}
}
