package app

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/fit"
	"github.com/llamatray/llamatray/router/service"
)

// modelForm is the text of the per-model settings form, as typed. Empty means "the default".
type modelForm struct {
	CtxSize, GPULayers, Parallel string
	CacheType, FlashAttn         string // "" = default
	Args, Aliases                string // space-separated arguments, comma-separated aliases
	IdleSleep, IdleUnload        string
	Pinned, LoadOnStart          bool
	Draft                        draftForm // modeldraft.go
}

// formFrom fills the form from a model's own [models."ID"] section (not the defaults).
func formFrom(m config.Model) modelForm {
	f := modelForm{CacheType: m.CacheType, FlashAttn: m.FlashAttn, Pinned: m.Pinned, LoadOnStart: m.LoadOnStart,
		Args: strings.Join(m.Args, " "), Aliases: strings.Join(m.Aliases, ", "), Draft: draftFormFrom(m)}
	if m.CtxSize != 0 {
		f.CtxSize = strconv.Itoa(m.CtxSize)
	}
	if m.GPULayers != nil {
		f.GPULayers = strconv.Itoa(*m.GPULayers)
	}
	if m.Parallel != 0 {
		f.Parallel = strconv.Itoa(m.Parallel)
	}
	if m.IdleSleep != nil {
		f.IdleSleep = m.IdleSleep.String()
	}
	if m.IdleUnload != nil {
		f.IdleUnload = m.IdleUnload.String()
	}
	return f
}

// unknownFlags finds the arguments that look like flags and that llama-server does not list. A
// value such as "-1" is not a flag.
func unknownFlags(args string, known map[string]bool) []formProblem {
	var probs []formProblem
	for _, a := range strings.Fields(args) {
		name, _, _ := strings.Cut(a, "=")
		if len(name) < 2 || name[0] != '-' || (name[1] >= '0' && name[1] <= '9') || name[1] == '.' || known[name] {
			continue
		}
		probs = append(probs, formProblem{Field: "args", Reason: fmt.Sprintf("llama-server has no flag %s (see llama-server --help)", name)})
	}
	return probs
}

// formProblem is one field the form cannot take, and why.
type formProblem struct {
	Field  string // the config key: "ctx_size"
	Reason string
}

func (p formProblem) String() string { return p.Field + ": " + p.Reason }

// apply returns cfg with the model's own section (a variant's: [models."ID".variants."NAME"])
// replaced by the form, or the problems found: values that do not parse, that the model cannot take
// (a context beyond the one it was trained on), that llama-server would refuse (a quantized V cache
// without flash attention), and whatever the configuration's own validation refuses (flags
// Llamatray sets itself in args, aliases taken).
func (f modelForm) apply(cfg config.Config, id string, m Model) (config.Config, []formProblem) {
	sec, probs := f.section(cfg, id, m)
	out := cfg.WithSection(id, sec)
	if probs = checkApplied(out, id, probs); len(probs) > 0 {
		return cfg, probs
	}
	return out, nil
}

// edit is apply of the form over cfg as it is now, for a window whose form stood at orig when it
// opened or last saved: what the form left as orig had it follows the section in force
// (config.Merge3), so that what was changed elsewhere since is kept.
func (f modelForm) edit(cfg config.Config, id string, orig modelForm, m Model) (config.Config, []formProblem) {
	mine, probs := f.section(cfg, id, m)
	was, _ := orig.section(cfg, id, m)
	cur, _ := cfg.Section(id)
	out := cfg.WithSection(id, config.Merge3(mine, was, cur))
	if probs = checkApplied(out, id, probs); len(probs) > 0 {
		return cfg, probs
	}
	return out, nil
}

// problemsText is the form's problems, one after each sep.
func problemsText(probs []formProblem, sep string) string {
	lines := make([]string, len(probs))
	for i, p := range probs {
		lines[i] = p.String()
	}
	return strings.Join(lines, sep)
}

// problemsError is the form's problems as one error, for a save that finds them only once the
// configuration in force is known.
func problemsError(probs []formProblem) error { return errors.New(problemsText(probs, "; ")) }

// applyAsVariant returns cfg with a new variant name of the model the form is open on (of its
// model, when that is a variant itself) holding what the form sets differently from that model's
// section, and the new variant's ID; or the problems found, as apply finds them.
func (f modelForm) applyAsVariant(cfg config.Config, id, name string, m Model) (config.Config, string, []formProblem) {
	base, _, _ := cfg.Variant(id)
	base = cmp.Or(base, id)
	sec, probs := f.section(cfg, id, m)
	own, _ := cfg.Section(base)
	out, err := cfg.WithVariant(base, strings.TrimSpace(name), config.VariantOver(own, sec))
	if err != nil {
		return cfg, "", append(probs, formProblem{Field: "variant", Reason: err.Error()})
	}
	vid := config.VariantID(base, strings.TrimSpace(name))
	if probs = checkApplied(out, vid, probs); len(probs) > 0 {
		return cfg, "", probs
	}
	return out, vid, nil
}

// section parses the form into model id's own section, with the problems of its values.
func (f modelForm) section(cfg config.Config, id string, m Model) (config.Model, []formProblem) {
	var probs []formProblem
	bad := func(field, reason string) { probs = append(probs, formProblem{field, reason}) }
	num := func(field, s string, min int) (int, bool) { return wholeNumber(field, s, min, bad) }
	cur, _ := cfg.Section(id)
	sec := config.Model{Hidden: cur.Hidden, Tags: cur.Tags, Workers: cur.Workers, Pinned: f.Pinned, // not on the form: kept
		LoadOnStart: f.LoadOnStart, CacheType: f.CacheType, FlashAttn: f.FlashAttn}
	sec.SetParams, sec.StripParams, sec.DefaultParams = cur.SetParams, cur.StripParams, cur.DefaultParams // the rules' own part saves them (modelrules.go)
	if n, ok := num("ctx_size", f.CtxSize, 0); ok {
		sec.CtxSize = n
		if trained := m.Entry().ContextLength; trained > 0 && n > trained {
			bad("ctx_size", fmt.Sprintf("%d is more than the %d tokens %s was trained on", n, trained, id))
		}
	}
	if n, ok := num("gpu_layers", f.GPULayers, -1); ok {
		sec.GPULayers = &n
	}
	if n, ok := num("parallel", f.Parallel, 0); ok {
		sec.Parallel = n
	}
	sec.Args = strings.Fields(f.Args)
	for _, a := range strings.Split(f.Aliases, ",") {
		if a = strings.TrimSpace(a); a != "" {
			sec.Aliases = append(sec.Aliases, a)
		}
	}
	sec.IdleSleep = optDuration("idle_sleep", f.IdleSleep, bad)
	sec.IdleUnload = optDuration("idle_unload", f.IdleUnload, bad)
	f.Draft.onto(&sec, num)
	return sec, probs
}

// wholeNumber reads a field's text s as a whole number of min or more; false when it is empty, or
// when it is not, said to bad.
func wholeNumber(field, s string, min int, bad func(field, reason string)) (int, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < min {
		bad(field, fmt.Sprintf("%q is not a whole number of %d or more", s, min))
		return 0, false
	}
	return n, true
}

// optDuration reads a field's text s as a duration ("-1": never); nil when it is empty, or when it
// is not one, said to bad.
func optDuration(field, s string, bad func(field, reason string)) *config.Duration {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	var d config.Duration
	if err := d.UnmarshalText([]byte(s)); err != nil || (d < 0 && d != config.Never) {
		bad(field, fmt.Sprintf("%q is not a duration like \"10m\" or \"1h\" (\"-1\": never)", s))
		return nil
	}
	return &d
}

// checkApplied adds to probs what is wrong with model id's settings in out: what llama-server would
// refuse, and what the configuration's validation refuses, by the key of id's section where it can.
func checkApplied(out config.Config, id string, probs []formProblem) []formProblem {
	bad := func(field, reason string) { probs = append(probs, formProblem{field, reason}) }
	eff := out.ModelSettings(id)
	if eff.CacheType != "" && eff.CacheType != "f16" && eff.CacheType != "f32" && eff.CacheType != "bf16" && eff.FlashAttn == "off" {
		bad("cache_type", fmt.Sprintf("a %s V cache needs flash attention; set flash attention to auto or on", eff.CacheType))
	}
	if err := out.Validate(); err != nil {
		key := out.SectionKey(id)
		for _, e := range flatten(err) {
			var fe *config.FieldError
			if errors.As(e, &fe) && len(fe.Key) == len(key)+1 && slices.Equal(fe.Key[:len(key)], key) {
				if !slices.ContainsFunc(probs, func(p formProblem) bool { return p.Field == fe.Key[len(key)] }) {
					bad(fe.Key[len(key)], fe.Reason)
				}
				continue
			}
			bad("config", e.Error())
		}
	}
	return probs
}

// flatten lists the errors an errors.Join holds.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// needsRestart reports whether the settings the child is started with differ between a and b
// (aliases, pins and timers apply without one).
func needsRestart(a, b config.Config, id string) bool {
	x, y := a.ModelSettings(id), b.ModelSettings(id)
	return x.CtxSize != y.CtxSize || x.FlashAttn != y.FlashAttn || x.Parallel != y.Parallel ||
		x.CacheType != y.CacheType || !slices.Equal(x.Args, y.Args) || !equalInt(x.GPULayers, y.GPULayers) ||
		x.Draft != y.Draft || x.DraftMax != y.DraftMax || !equalInt(x.DraftGPULayers, y.DraftGPULayers)
}

func equalInt(a, b *int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// applyPlan says what applying does to a model in state m: restart it now (running and idle), or
// leave it to the next load (busy, or not running).
func applyPlan(m Model) (restart bool, note string) {
	switch {
	case !m.Running():
		return false, "Saved; the settings apply at the next load."
	case m.Active > 0 || m.Queued > 0 || m.State == service.StateLoading || m.State == service.StateStopping:
		return false, fmt.Sprintf("Saved; %s is busy, so the settings apply at its next load.", m.ID)
	}
	return true, fmt.Sprintf("Saved; %s was idle and is restarting with the new settings.", m.ID)
}

// fitLine says what the settings need and whether that fits, in the engine's words. own is what the
// model holds now, freed by the restart.
func fitLine(need int64, learned bool, room fit.Room, own int64) (string, fit.Fit) {
	room.Free += own
	f, why := fit.For(need, room)
	src := " (the engine's estimate for these settings)"
	if learned {
		src = " (measured when it last ran with these settings)"
	}
	switch f {
	case fit.Now:
		return "Fits: " + why + src, f
	case fit.TooLarge:
		return "Too large: " + why + src, f
	}
	return "Fits later: " + why + src, f
}
