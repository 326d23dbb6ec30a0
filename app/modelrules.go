package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"github.com/llamatray/llamatray/router/config"
)

// modelRules is the "Request rules" part of a model's settings window: set_params and
// default_params as JSON object text, strip_params as a comma list. They change the JSON body of
// every request for the model before it reaches llama-server, so they apply from the next request
// on, without a restart, and are saved by a button of their own through Backend.EditConfig. Fields
// are used on the UI thread only.
type modelRules struct {
	u  *ui
	id string

	set, strip, defaults *widget.Entry
	problems, result     *widget.Label
	save                 *widget.Button
	box                  fyne.CanvasObject
}

type rulesForm struct {
	Set, Strip, Defaults string
}

// newModelRules builds the rules part of model id's settings window.
func newModelRules(u *ui, id string) *modelRules {
	r := &modelRules{u: u, id: id}
	cfg := u.b.Config()
	own, _ := cfg.Section(id)
	f := rulesFormFrom(own)
	entry := func(text, hint string) *widget.Entry {
		e := widget.NewMultiLineEntry()
		e.SetMinRowsVisible(2)
		e.Wrapping = fyne.TextWrapWord
		return fillEntry(e, text, hint, r.changed)
	}
	r.set = entry(f.Set, `forced into every request, e.g. {"temperature": 0.2}`)
	r.defaults = entry(f.Defaults, `used when a request gives none, e.g. {"top_k": 40, "min_p": 0.05}`)
	r.strip = fillEntry(widget.NewEntry(), f.Strip, "removed from every request, e.g. logit_bias, seed", r.changed)
	if base, _, ok := cfg.Variant(id); ok { // a variant's rules are layered over its model's
		inh := rulesFormFrom(cfg.ModelSettings(base))
		if inh.Set != "" {
			r.set.SetPlaceHolder(fmt.Sprintf("over %s's: %s", base, inh.Set))
		}
		if inh.Defaults != "" {
			r.defaults.SetPlaceHolder(fmt.Sprintf("over %s's: %s", base, inh.Defaults))
		}
		if inh.Strip != "" {
			r.strip.SetPlaceHolder(fmt.Sprintf("added to %s's: %s", base, inh.Strip))
		}
	}
	r.problems = tinted(wrapLabel(""), widget.DangerImportance)
	r.problems.Hide()
	r.result = wrapLabel("")
	r.result.Hide()
	r.save = widget.NewButton("Save rules", r.saveRules)
	about := wrapLabel("Request rules change the top-level fields of every request's JSON body for this model " +
		"(OpenAI, Anthropic, llama-server's own and Ollama's API) before llama-server gets it; they apply from the next request.")
	form := widget.NewForm(
		widget.NewFormItem("Set", r.set),
		widget.NewFormItem("Strip", r.strip),
		widget.NewFormItem("Defaults", r.defaults),
	)
	r.box = container.NewVBox(widget.NewSeparator(), boldLabel("Request rules"),
		about, form, r.problems, r.result, container.NewHBox(r.save))
	r.changed()
	return r
}

func (r *modelRules) form() rulesForm {
	return rulesForm{Set: r.set.Text, Strip: r.strip.Text, Defaults: r.defaults.Text}
}

// changed shows what is wrong with the rules as typed.
func (r *modelRules) changed() {
	if r.save == nil {
		return // still being built
	}
	_, probs := r.form().apply(r.u.b.Config(), r.id)
	r.showProblems(probs)
}

func (r *modelRules) showProblems(probs []formProblem) { showProblems(r.problems, probs, r.save) }

// saveRules writes the rules into the model's section of the configuration in force.
func (r *modelRules) saveRules() {
	f := r.form()
	if _, probs := f.apply(r.u.b.Config(), r.id); len(probs) > 0 {
		r.showProblems(probs)
		return
	}
	b, id := r.u.b, r.id
	r.u.saveInBackground(r.result, "Saving…", []*widget.Button{r.save}, func() (string, error) {
		return "Saved: the rules apply from the next request.", b.EditConfig(func(c *config.Config) error {
			next, probs := f.apply(*c, id)
			if len(probs) > 0 {
				return problemsError(probs)
			}
			*c = next
			return nil
		})
	}, nil)
}

// rulesFormFrom is the text the entries show for section m.
func rulesFormFrom(m config.Model) rulesForm {
	return rulesForm{Set: paramsText(m.SetParams), Strip: strings.Join(m.StripParams, ", "), Defaults: paramsText(m.DefaultParams)}
}

// paramsText writes rule values as one JSON object, keys sorted; "" for none.
func paramsText(p map[string]any) string {
	if len(p) == 0 {
		return ""
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(p) != nil {
		return ""
	}
	return strings.TrimSpace(buf.String())
}

// apply returns cfg with model id's own section holding the rules of f, or the problems found:
// text that is not a JSON object, a value TOML cannot hold, and what the configuration's own
// validation refuses (a rule over "model", "stream" or the conversation itself).
func (f rulesForm) apply(cfg config.Config, id string) (config.Config, []formProblem) {
	var probs []formProblem
	set, err := parseParams(f.Set)
	if err != nil {
		probs = append(probs, formProblem{"set_params", err.Error()})
	}
	defaults, err := parseParams(f.Defaults)
	if err != nil {
		probs = append(probs, formProblem{"default_params", err.Error()})
	}
	var strip []string
	for _, s := range strings.Split(f.Strip, ",") {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(strip, s) {
			strip = append(strip, s)
		}
	}
	if len(probs) > 0 {
		return cfg, probs
	}
	sec, _ := cfg.Section(id)
	sec.SetParams, sec.StripParams, sec.DefaultParams = set, strip, defaults
	out := cfg.WithSection(id, sec)
	if probs = checkApplied(out, id, nil); len(probs) > 0 {
		return cfg, probs
	}
	return out, nil
}

// parseParams reads one JSON object of rule values: numbers written without a fraction or exponent
// are integers (int64), others floats, as TOML keeps them; null has no TOML form and is refused.
// Empty text is no rules (nil).
func parseParams(text string) (map[string]any, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("one JSON object only, like {\"temperature\": 0.2}")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be a JSON object of fields, like {\"temperature\": 0.2}")
	}
	if len(obj) == 0 {
		return nil, nil
	}
	out, err := ruleValue(obj, "")
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

// ruleValue turns a decoded JSON value into one config holds: json.Number into int64 or float64.
func ruleValue(v any, at string) (any, error) {
	switch v := v.(type) {
	case nil:
		return nil, fmt.Errorf("%s: null cannot be saved; leave the field out instead", strings.TrimPrefix(at, "."))
	case json.Number:
		if !strings.ContainsAny(v.String(), ".eE") {
			if n, err := v.Int64(); err == nil {
				return n, nil
			}
		}
		f, err := v.Float64()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.TrimPrefix(at, "."), err)
		}
		return f, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			x, err := ruleValue(e, at+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			x, err := ruleValue(e, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	default: // string, bool
		return v, nil
	}
}
