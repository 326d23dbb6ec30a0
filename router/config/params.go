package config

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// A request rule's value is what TOML decodes into and JSON can carry: a string, a bool, an
// int64, a float64, a list of values or a table of them.

// ruleReserved are the body fields no request rule may touch: Llamatray routes by "model" and
// streams by "stream", and a rule over the conversation itself would replace every request's.
var ruleReserved = []string{"model", "stream", "messages", "prompt", "input", "system"}

// mergeParams is base with over's fields laid over it (a variant's rules over its model's).
func mergeParams(base, over map[string]any) map[string]any {
	if len(base) == 0 && len(over) == 0 {
		return nil
	}
	out := map[string]any{}
	maps.Copy(out, deepCopy(base))
	maps.Copy(out, deepCopy(over))
	return out
}

// unionStrings is a followed by the strings of b it lacks.
func unionStrings(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// checkRules checks one section's request rules.
func checkRules(m Model, bad func(reason string, key ...string), at func(string) []string) {
	for _, r := range []struct {
		key    string
		params map[string]any
	}{{"set_params", m.SetParams}, {"default_params", m.DefaultParams}} {
		for _, name := range slices.Sorted(maps.Keys(r.params)) {
			if err := checkRuleName(name); err != nil {
				bad(err.Error(), at(r.key)...)
			}
			if err := checkValue(r.params[name]); err != nil {
				bad(fmt.Sprintf("%s: %v", name, err), at(r.key)...)
			}
		}
	}
	for _, name := range m.StripParams {
		if err := checkRuleName(name); err != nil {
			bad(err.Error(), at("strip_params")...)
		}
	}
	if m.DraftMax < 0 {
		bad("must not be negative (0 = llama-server's default)", at("draft_max")...)
	}
	if m.DraftGPULayers != nil && *m.DraftGPULayers < -1 {
		bad("must be -1 (all layers) or more", at("draft_gpu_layers")...)
	}
	if strings.TrimSpace(m.Draft) != m.Draft {
		bad(fmt.Sprintf("%q has spaces around it", m.Draft), at("draft")...)
	}
}

func checkRuleName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("a field name must not be empty")
	case slices.Contains(ruleReserved, name):
		return fmt.Errorf("%q is set by the request and Llamatray; a rule cannot change it", name)
	}
	return nil
}

func checkValue(v any) error {
	switch v := v.(type) {
	case string, bool, int64:
		return nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return fmt.Errorf("%v cannot be sent as JSON", v)
		}
		return nil
	case []any:
		for _, e := range v {
			if err := checkValue(e); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		return checkValue(slices.Collect(maps.Values(v)))
	default:
		return fmt.Errorf("a %T cannot be sent as JSON; use a string, number, boolean, list or table", v)
	}
}

// value writes v as TOML: tables inline, keys sorted.
func (r *renderer) value(v any) string {
	switch v := v.(type) {
	case string:
		return r.str(v)
	case bool:
		return strconv.FormatBool(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case Duration:
		return r.str(v.String())
	case []string:
		return r.list(v)
	case float64:
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0" // stays a float when read back
		}
		return s
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = r.value(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := slices.Sorted(maps.Keys(v))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = r.key(k) + " = " + r.value(v[k])
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	default:
		if r.err == nil {
			r.err = fmt.Errorf("a %T cannot be written to the configuration", v)
		}
		return `""`
	}
}

// key writes a table key: bare when TOML allows, else quoted.
func (r *renderer) key(k string) string {
	if k == "" || strings.ContainsFunc(k, func(c rune) bool { return c == '.' || notNameRune(c) }) {
		return r.str(k)
	}
	return k
}
