package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/view"
)

// Choices of the selects; the first stands for "unset".
const (
	unsetChoice  = "default"
	defaultCache = unsetChoice + " (f16)"
)

// modelSettingsWindow edits one model's [models."ID"] section: context size, GPU layers, KV cache
// type, flash attention, parallel slots, extra arguments, aliases, idle timers, pinned and load on
// start. The memory the settings need, and whether that fits, follow every change. Fields are used
// on the UI thread only; estimates and applying run on goroutines.
type modelSettingsWindow struct {
	u   *ui
	id  string
	win fyne.Window

	ctx, gpu, parallel, args, aliases, sleep, unload *widget.Entry
	cache, fa                                        *widget.Select
	pinned, onStart                                  *widget.Check
	head, memory, problems, result                   *widget.Label
	apply, asVariant                                 *widget.Button
	rules                                            *modelRules  // request rules (modelrules.go)
	draft                                            *draftFields // modeldraft.go

	seq uint64 // the latest estimate asked for; older answers are dropped
	// refusal is what the last estimate found the model cannot run with, for the configuration
	// refusedFor: while the form still gives that configuration, the problem stays on screen
	// (a later changed, such as the flags arriving, does not clear it and enable Apply).
	refusal    []formProblem
	refusedFor config.Config
	orig       modelForm       // the form as the window opened or last saved it (see modelForm.over)
	known      map[string]bool // llama-server's flags, nil until read (or when they cannot be)
}

func (u *ui) showModelSettings(id string) {
	if w := u.modelSettings[id]; w != nil {
		raise(w.win)
		return
	}
	if u.modelSettings == nil {
		u.modelSettings = map[string]*modelSettingsWindow{}
	}
	w := newModelSettingsWindow(u, id)
	u.modelSettings[id] = w
	w.win.SetOnClosed(func() { delete(u.modelSettings, id) })
	w.win.Show()
}

func newModelSettingsWindow(u *ui, id string) *modelSettingsWindow {
	w := &modelSettingsWindow{u: u, id: id, win: u.newWindow("Settings of "+id, fyne.NewSize(660, 720))}
	cfg := u.b.Config()
	own, _ := cfg.Section(id) // a variant's own section
	w.orig = formFrom(own)
	m, _ := w.model()
	trained := "unknown"
	if n := m.Entry().ContextLength; n > 0 {
		trained = fmt.Sprint(n)
	}
	w.newFields(cfg, w.orig, trained)
	w.newControls()
	w.win.SetContent(container.NewVScroll(w.body(cfg, m, trained)))
	w.changed()
	go w.readFlags()
	return w
}

// newFields makes the form's fields, filled from f; an empty field's hint is what it stands for
// (the defaults, or a variant's model's settings).
func (w *modelSettingsWindow) newFields(cfg config.Config, f modelForm, trained string) {
	entry := func(text, hint string) *widget.Entry { return fillEntry(widget.NewEntry(), text, hint, w.changed) }
	w.ctx = entry(f.CtxSize, fmt.Sprintf("default %d; 0: trained context (%s)", cfg.Defaults.CtxSize, trained))
	gpuHint := "llama-server's default; -1: all layers, 0: CPU only"
	if cfg.Defaults.GPULayers != nil {
		gpuHint = fmt.Sprintf("default %d; -1: all layers, 0: CPU only", *cfg.Defaults.GPULayers)
	}
	w.gpu = entry(f.GPULayers, gpuHint)
	w.parallel = entry(f.Parallel, fmt.Sprintf("default %d (0: llama-server's)", cfg.Defaults.Parallel))
	w.args = entry(f.Args, "extra llama-server arguments, e.g. --jinja --temp 0.7")
	w.aliases = entry(f.Aliases, "other names, separated by commas")
	w.sleep = entry(f.IdleSleep, "global: "+cfg.IdleSleep.String())
	w.unload = entry(f.IdleUnload, "global: "+cfg.IdleUnload.String())
	cacheDefault, faDefault := defaultCache, unsetChoice+" ("+cfg.Defaults.FlashAttn+")"
	if base, _, isVariant := cfg.Variant(w.id); isVariant { // an empty field is the model's setting
		inh := cfg.ModelSettings(base)
		w.variantHints(base, inh, trained)
		cacheDefault = unsetChoice + " (" + base + "'s: " + cmp.Or(inh.CacheType, "f16") + ")"
		faDefault = unsetChoice + " (" + base + "'s: " + inh.FlashAttn + ")"
	}
	w.cache = widget.NewSelect(append([]string{cacheDefault}, config.CacheTypes...), func(string) { w.changed() })
	w.cache.SetSelected(cmp.Or(f.CacheType, cacheDefault))
	w.fa = widget.NewSelect([]string{faDefault, "auto", "on", "off"}, func(string) { w.changed() })
	w.fa.SetSelected(cmp.Or(f.FlashAttn, w.fa.Options[0]))
	w.pinned = widget.NewCheck("Pinned: never unloaded for memory or by idle timers", func(bool) { w.changed() })
	w.pinned.SetChecked(f.Pinned)
	w.onStart = widget.NewCheck("Load when Llamatray starts", func(bool) { w.changed() })
	w.onStart.SetChecked(f.LoadOnStart)
	w.draft = newDraftFields(w, f.Draft, w.changed)
}

// variantHints are a variant's fields' hints: empty, a field is its model base's setting, inh.
func (w *modelSettingsWindow) variantHints(base string, inh config.Model, trained string) {
	w.ctx.SetPlaceHolder(fmt.Sprintf("%s's: %d; 0: trained context (%s)", base, inh.CtxSize, trained))
	if inh.GPULayers != nil {
		w.gpu.SetPlaceHolder(fmt.Sprintf("%s's: %d; -1: all layers, 0: CPU only", base, *inh.GPULayers))
	}
	w.parallel.SetPlaceHolder(fmt.Sprintf("%s's: %d (0: llama-server's)", base, inh.Parallel))
	if len(inh.Args) > 0 {
		w.args.SetPlaceHolder(fmt.Sprintf("added after %s's: %s", base, strings.Join(inh.Args, " ")))
	}
	w.sleep.SetPlaceHolder(fmt.Sprintf("%s's: %s", base, inh.IdleSleep))
	w.unload.SetPlaceHolder(fmt.Sprintf("%s's: %s", base, inh.IdleUnload))
}

// newControls makes the lines under the form (memory, problems, Apply's outcome), the buttons and
// the request rules.
func (w *modelSettingsWindow) newControls() {
	w.memory = wrapLabel("")
	w.problems = tinted(wrapLabel(""), widget.DangerImportance)
	w.result = wrapLabel("")
	w.result.Hide() // shown with the outcome of Apply
	w.apply = widget.NewButton("Apply", w.save)
	w.apply.Importance = widget.HighImportance
	w.asVariant = widget.NewButton("Save as variant…", w.askVariant)
	w.rules = newModelRules(w.u, w.id)
}

// body lays the window out: the model's line (and the variant's), the form, the checks, the
// rules, the memory and problems, the buttons.
func (w *modelSettingsWindow) body(cfg config.Config, m Model, trained string) fyne.CanvasObject {
	form := widget.NewForm(append([]*widget.FormItem{
		widget.NewFormItem("Context size", w.ctx),
		widget.NewFormItem("GPU layers", w.gpu),
		widget.NewFormItem("KV cache type", w.cache),
		widget.NewFormItem("Flash attention", w.fa),
		widget.NewFormItem("Parallel slots", w.parallel),
		widget.NewFormItem("Extra arguments", w.args),
		widget.NewFormItem("Aliases", w.aliases),
		widget.NewFormItem("Sleep when idle for", w.sleep),
		widget.NewFormItem("Unload when idle for", w.unload),
	}, w.draft.items()...)...)
	w.head = wrapLabel(fmt.Sprintf("%s · %s %s · trained context %s · runs now with context %d",
		w.id, catalog.ParamsLabel(m.Entry().Parameters), m.Entry().Quantization, trained, cfg.ModelSettings(w.id).CtxSize))
	top := []fyne.CanvasObject{w.head}
	// A variant's line is a line of its own: a wrapped header is cut at its first line in the form's scroll.
	if base, variant, isVariant := cfg.Variant(w.id); isVariant {
		of := wrapLabel(fmt.Sprintf("Variant %q of %s: empty fields are %s's.", variant, base, base))
		top = append(top, of)
	}
	return container.NewVBox(append(top, form, w.pinned, w.onStart, w.rules.box, widget.NewSeparator(), w.memory, w.problems, w.result,
		container.NewHBox(w.apply, w.asVariant, widget.NewButton("Close", w.win.Close)))...)
}

// readFlags reads llama-server's flags (off the UI thread), for changed to judge the extra
// arguments by; without them (none offered, or no llama-server) llama-server judges them.
func (w *modelSettingsWindow) readFlags() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	flags, err := w.u.b.LlamaServerFlags(ctx)
	if err != nil {
		return
	}
	known := make(map[string]bool, len(flags))
	for _, f := range flags {
		known[f] = true
	}
	w.u.onUI(func() { w.known = known; w.changed() })
}

// model is the model as the last snapshot shows it. A variant the snapshot does not list yet (one
// just saved, before the catalog's rescan) has its model's file, so the facts of that file are its
// model's: size, quantization, trained context.
func (w *modelSettingsWindow) model() (Model, bool) {
	if m, ok := w.u.snap.model(w.id); ok {
		return m, true
	}
	m := Model{Model: view.Model{ModelStatus: service.ModelStatus{ID: w.id}}}
	if base, _, isVariant := w.u.b.Config().Variant(w.id); isVariant {
		if of, ok := w.u.snap.model(base); ok {
			m.Meta = of.Meta
		}
	}
	return m, false
}

func (w *modelSettingsWindow) form() modelForm {
	f := modelForm{CtxSize: w.ctx.Text, GPULayers: w.gpu.Text, Parallel: w.parallel.Text, Args: w.args.Text,
		Aliases: w.aliases.Text, IdleSleep: w.sleep.Text, IdleUnload: w.unload.Text,
		Pinned: w.pinned.Checked, LoadOnStart: w.onStart.Checked, Draft: w.draft.form()}
	if w.cache.SelectedIndex() > 0 {
		f.CacheType = w.cache.Selected
	}
	if w.fa.SelectedIndex() > 0 {
		f.FlashAttn = w.fa.Selected
	}
	return f
}

// changed validates the form and asks for the memory it needs.
func (w *modelSettingsWindow) changed() {
	if w.apply == nil {
		return // still being built
	}
	m, _ := w.model()
	f := w.form()
	cfg, probs := f.apply(w.u.b.Config(), w.id, m)
	if w.known != nil {
		probs = append(probs, unknownFlags(f.Args, w.known)...)
	}
	if w.refusal != nil && len(probs) == 0 && reflect.DeepEqual(cfg, w.refusedFor) {
		w.showProblems(w.refusal)
		return
	}
	w.refusal = nil
	w.showProblems(probs)
	if !w.u.b.Offers().EstimateWith {
		return
	}
	if len(probs) > 0 {
		w.seq++ // an estimate on its way is for other settings
		w.memory.Importance = widget.MediumImportance
		w.memory.SetText("Memory need: correct the settings first.")
		return
	}
	w.seq++
	w.memory.SetText("Estimating the memory these settings need…")
	go w.estimate(w.seq, cfg, m.MemoryBytes)
}

// estimate asks, off the UI thread, for the memory model settings cfg need, and shows it against
// the room there is (with own, what the model holds now, freed by a restart) unless a later change
// asked for another (seq). A refusal of the settings is shown as a problem of the form.
func (w *modelSettingsWindow) estimate(seq uint64, cfg config.Config, own int64) {
	need, learned, room, err := w.u.b.EstimateWith(w.id, cfg)
	w.u.onUI(func() {
		if seq != w.seq {
			return
		}
		var se *catalog.SettingsError
		if errors.As(err, &se) {
			// The model cannot run with these settings: a problem like the form's own.
			w.memory.Importance = widget.MediumImportance
			w.memory.SetText("Memory need: correct the settings first.")
			w.refusal, w.refusedFor = []formProblem{{Field: se.Key, Reason: se.Reason}}, cfg
			w.showProblems(w.refusal)
			return
		}
		if err != nil {
			w.memory.SetText("Memory need unknown: " + err.Error())
			w.memory.Importance = widget.WarningImportance
			w.memory.Refresh()
			return
		}
		line, fit := fitLine(need, learned, room, own)
		w.memory.Importance = fitImportance(fit)
		w.memory.SetText(line)
	})
}

func (w *modelSettingsWindow) showProblems(probs []formProblem) {
	showProblems(w.problems, probs, w.apply, w.asVariant)
}

// showProblems shows probs on l, one a line, with the buttons that would save them disabled; no
// problems hide l and enable the buttons.
func showProblems(l *widget.Label, probs []formProblem, buttons ...*widget.Button) {
	l.SetText(problemsText(probs, "\n"))
	showIf(l, len(probs) > 0)
	for _, b := range buttons {
		enableIf(b, len(probs) == 0)
	}
}

// saveInBackground runs save off the UI thread while status says text and buttons are disabled.
// Back on the UI thread the buttons are enabled again and status shows the outcome: save's error,
// or the note it returns, and then done (when not nil) runs.
func (u *ui) saveInBackground(status *widget.Label, text string, buttons []*widget.Button, save func() (string, error), done func()) {
	for _, b := range buttons {
		b.Disable()
	}
	status.Importance = widget.MediumImportance
	status.SetText(text)
	status.Show()
	go func() {
		note, err := save()
		u.onUI(func() {
			for _, b := range buttons {
				b.Enable()
			}
			if err != nil {
				status.Importance = widget.DangerImportance
				status.SetText(err.Error())
				return
			}
			status.Importance = widget.SuccessImportance
			status.SetText(note)
			if done != nil {
				done()
			}
		})
	}()
}

// save writes the model's section and applies it: the model restarts when it runs idle and a
// setting its llama-server is started with changed, else the settings wait for its next load.
func (w *modelSettingsWindow) save() {
	m, _ := w.model()
	f, orig := w.form(), w.orig
	if w.known != nil {
		if probs := unknownFlags(f.Args, w.known); len(probs) > 0 {
			w.showProblems(probs)
			return
		}
	}
	if _, probs := f.edit(w.u.b.Config(), w.id, orig, m); len(probs) > 0 {
		w.showProblems(probs)
		return
	}
	b, id := w.u.b, w.id
	w.u.saveInBackground(w.result, "Saving…", []*widget.Button{w.apply}, func() (string, error) {
		return saveModelSettings(b, id, f, orig, m)
	}, func() {
		w.orig = f
		w.changed()
	})
}

// saveModelSettings saves model id's settings as form f changed them from orig, off the UI thread,
// and says what was done. The form goes over the configuration in force when the edit is made:
// what the user left as it was keeps what others changed meanwhile (a pin, an alias). A changed pin
// takes effect at once; an idle model m restarts when a setting its llama-server is started with
// changed (applyPlan).
func saveModelSettings(b Backend, id string, f, orig modelForm, m Model) (note string, err error) {
	plan, planNote := applyPlan(m)
	var restart, pinChanged, pinned bool
	err = b.EditConfig(func(c *config.Config) error {
		next, probs := f.edit(*c, id, orig, m)
		if len(probs) > 0 {
			return problemsError(probs)
		}
		restart, note = plan, planNote
		if !needsRestart(*c, next, id) {
			restart, note = false, "Saved and applied."
		}
		was, _ := c.Section(id)
		now, _ := next.Section(id)
		pinChanged, pinned = was.Pinned != now.Pinned, now.Pinned
		*c = next
		return nil
	})
	if err == nil && pinChanged {
		err = b.SetPinned(id, pinned)
	}
	if err == nil && restart {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = b.Unload(ctx, id, false)
		cancel()
		if err == nil {
			err = b.Load(id)
		}
		if err != nil {
			err = fmt.Errorf("saved, but the restart failed: %w", err)
		}
	}
	return note, err
}
