package app

import (
	"cmp"
	"fmt"

	"github.com/llamatray/llamatray/router/config"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"
)

// askVariant asks for the name of a new variant of the model the window is open on, made of the
// form as it stands.
func (w *modelSettingsWindow) askVariant() {
	name := widget.NewEntry()
	name.SetPlaceHolder("e.g. 32k")
	base, _, _ := w.u.b.Config().Variant(w.id)
	base = cmp.Or(base, w.id) // a variant's own variants are its model's
	msg := widget.NewLabel(fmt.Sprintf("A variant is one more model ID, %s@NAME, for the same file, with the\nsettings of this form. Letters, digits, '.', '-' and '_'.", base))
	d := dialog.NewForm("Save as variant", "Save", "Cancel", []*widget.FormItem{
		widget.NewFormItem("", msg), widget.NewFormItem("Name", name),
	}, func(ok bool) {
		if ok {
			w.createVariant(name.Text)
		}
	}, w.win)
	d.Resize(fyne.NewSize(480, 200))
	d.Show()
}

// createVariant saves the form as a new variant name of the model (of its model, when the window
// is on a variant): only what differs from that model's section is written, in
// [models."ID".variants."NAME"]. Once saved, the new variant's settings open.
func (w *modelSettingsWindow) createVariant(name string) {
	m, _ := w.model()
	f := w.form()
	_, vid, probs := f.applyAsVariant(w.u.b.Config(), w.id, name, m)
	if w.known != nil {
		probs = append(probs, unknownFlags(f.Args, w.known)...)
	}
	if len(probs) > 0 {
		w.showProblems(probs)
		return
	}
	b, id := w.u.b, w.id
	// Made over the configuration in force when the edit is made; the service rescans before it
	// returns, so the new variant's window finds it in the catalog.
	w.u.saveInBackground(w.result, "Saving the variant…", []*widget.Button{w.apply, w.asVariant}, func() (string, error) {
		return fmt.Sprintf("Saved as %s, a model of its own; its settings are open.", vid), b.EditConfig(func(c *config.Config) error {
			next, _, probs := f.applyAsVariant(*c, id, name, m)
			if len(probs) > 0 {
				return problemsError(probs)
			}
			*c = next
			return nil
		})
	}, func() { w.u.showModelSettings(vid) })
}
