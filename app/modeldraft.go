package app

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/config"
)

// The draft model of a model's settings (speculative decoding): draft, draft_gpu_layers and
// draft_max of its section. The window offers as drafts only the models whose vocabulary matches
// the model's (the catalog compares their GGUF headers, as llama.cpp does) and says why each other
// model is not offered; a draft configured by hand that does not match is a problem of the form, as
// the catalog's estimate reports it, and Apply stays off. The draft's memory is in the estimate the
// window shows.

// draftForm is the draft part of the settings form, as typed: the draft's name ("" = none, or the
// model's for a variant), its GPU layers and the tokens drafted per step ("" = llama-server's).
type draftForm struct {
	Model, GPULayers, Max string
}

func draftFormFrom(m config.Model) draftForm {
	d := draftForm{Model: m.Draft}
	if m.DraftGPULayers != nil {
		d.GPULayers = strconv.Itoa(*m.DraftGPULayers)
	}
	if m.DraftMax != 0 {
		d.Max = strconv.Itoa(m.DraftMax)
	}
	return d
}

// onto parses d into sec, reading its numbers with num (which keeps their problems).
func (d draftForm) onto(sec *config.Model, num func(field, s string, min int) (int, bool)) {
	sec.Draft = strings.TrimSpace(d.Model)
	if n, ok := num("draft_gpu_layers", d.GPULayers, -1); ok {
		sec.DraftGPULayers = &n
	}
	if n, ok := num("draft_max", d.Max, 1); ok {
		sec.DraftMax = n
	}
}

// noDraft is the draft select's first choice: no draft, or for a variant its model's.
const noDraft = "none"

// draftFields are the draft's widgets of a settings window.
type draftFields struct {
	model    *widget.Select
	gpu, max *widget.Entry
	note     *widget.Label // the models not offered, and why
}

// newDraftFields builds the draft's widgets of window w, showing f; changed is called on every edit.
func newDraftFields(w *modelSettingsWindow, f draftForm, changed func()) *draftFields {
	d := &draftFields{note: captionLabel("")}
	first := noDraft
	if base, _, ok := w.u.b.Config().Variant(w.id); ok {
		first = unsetChoice + " (" + base + "'s: " + cmp.Or(w.u.b.Config().ModelSettings(base).Draft, noDraft) + ")"
	}
	options, note := draftChoices(w.u.b, w.id, f.Model)
	d.note.SetText(note)
	if note == "" {
		d.note.Hide()
	}
	d.model = widget.NewSelect(append([]string{first}, options...), func(string) { changed() })
	d.model.SetSelected(cmp.Or(f.Model, first))
	d.gpu = fillEntry(widget.NewEntry(), f.GPULayers, "llama-server's default (auto); -1: all layers, 0: CPU only", changed)
	d.max = fillEntry(widget.NewEntry(), f.Max, "llama-server's default (3)", changed)
	return d
}

// draftChoices are the models b offers as drafts for id, the configured one (current) always among
// them, and a note naming the models not offered with the reason.
func draftChoices(b Backend, id, current string) ([]string, string) {
	var ok []string
	var refused map[string]string
	var err error
	if ok, refused, err = b.DraftCandidates(id); err != nil {
		return nonEmpty(current), "Drafts unknown: " + err.Error()
	}
	base, _, _ := b.Config().Variant(id)
	base = cmp.Or(base, id)
	ok = slices.DeleteFunc(slices.Clone(ok), func(c string) bool { return c == base }) // drafting for itself gains nothing
	if current != "" && !slices.Contains(ok, current) {
		ok = append(ok, current) // as configured; the estimate says what is wrong with it
	}
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(refused)) {
		lines = append(lines, refused[name])
	}
	note := ""
	switch {
	case len(lines) > 4:
		note = "Not offered, another vocabulary: " + strings.Join(lines[:4], "; ") + fmt.Sprintf("; and %d more.", len(lines)-4)
	case len(lines) > 0:
		note = "Not offered, another vocabulary: " + strings.Join(lines, "; ") + "."
	}
	return ok, note
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func (d *draftFields) items() []*widget.FormItem {
	return []*widget.FormItem{
		widget.NewFormItem("Draft model", container.NewVBox(d.model, d.note)), // a hidden note takes no row
		widget.NewFormItem("Draft GPU layers", d.gpu),
		widget.NewFormItem("Draft tokens per step", d.max),
	}
}

func (d *draftFields) form() draftForm {
	f := draftForm{GPULayers: d.gpu.Text, Max: d.max.Text}
	if d.model.SelectedIndex() > 0 {
		f.Model = d.model.Selected
	}
	return f
}
