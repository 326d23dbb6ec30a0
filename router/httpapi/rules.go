package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/llamatray/llamatray/router/ollama"
)

// Request rules ([models."ID"] set_params, strip_params, default_params) change the top-level
// fields of a request's JSON body before it is proxied to the model's llama-server, whatever API
// the request spoke: the body is spliced, never decoded and encoded again, so every byte of a field
// no rule names reaches the child as the client sent it, in its place.

// RuleSet is the request rules of every model that has any, by canonical model ID (a variant's
// "ID@NAME" with its model's rules layered under its own).
type RuleSet map[string]*Rules

// Rules is one model's request rules, compiled: each value already written as JSON.
type Rules struct {
	set      []ruleField // replace the request's field of that name, or are added
	strip    []string    // removed
	defaults []ruleField // added when the request has no field of that name, or only null
	names    []string    // every name the rules above read: theirs and the defaults' synonyms
}

// ruleField is one field a rule writes: its name and its value in JSON.
type ruleField struct {
	name  string
	value []byte   // JSON
	field []byte   // "name":value, as added to a body
	also  []string // the other names llama-server reads the same setting by (ruleSynonyms)
}

// ruleSynonyms are the fields llama-server reads one setting from, by API: a request that gives
// any of them gives that setting, so a default of another of them is not added (llama-server would
// prefer n_predict, say, to the request's own max_tokens).
var ruleSynonyms = [][]string{
	{"n_predict", "max_tokens", "max_completion_tokens"},
	{"stop", "stop_sequences"},
}

func synonymsOf(name string) []string {
	for _, g := range ruleSynonyms {
		if slices.Contains(g, name) {
			return slices.DeleteFunc(slices.Clone(g), func(n string) bool { return n == name })
		}
	}
	return nil
}

// NewRules compiles one model's rules; nil (and no error) when it has none. A value is a string,
// bool, int64, float64, []any or map[string]any, as config gives them.
func NewRules(set map[string]any, strip []string, defaults map[string]any) (*Rules, error) {
	if len(set) == 0 && len(strip) == 0 && len(defaults) == 0 {
		return nil, nil
	}
	r := &Rules{}
	var err error
	if r.set, err = ruleFields("set_params", set); err != nil {
		return nil, err
	}
	if r.defaults, err = ruleFields("default_params", defaults); err != nil {
		return nil, err
	}
	for _, name := range strip {
		if name == "" {
			return nil, fmt.Errorf("strip_params: a field name must not be empty")
		}
		if !slices.Contains(r.strip, name) {
			r.strip = append(r.strip, name)
		}
	}
	for _, f := range slices.Concat(r.set, r.defaults) {
		r.names = append(r.names, f.name)
		r.names = append(r.names, f.also...)
	}
	r.names = append(r.names, r.strip...)
	slices.Sort(r.names)
	r.names = slices.Compact(r.names)
	return r, nil
}

func ruleFields(key string, params map[string]any) ([]ruleField, error) {
	out := make([]ruleField, 0, len(params))
	for _, name := range slices.Sorted(maps.Keys(params)) { // fields are added in this order
		if name == "" {
			return nil, fmt.Errorf("%s: a field name must not be empty", key)
		}
		v, err := jsonValue(params[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", key, name, err)
		}
		n, _ := jsonValue(name)
		out = append(out, ruleField{name: name, value: v, field: slices.Concat(n, []byte(":"), v), also: synonymsOf(name)})
	}
	return out, nil
}

// jsonValue writes v as compact JSON, leaving <, > and & as they are (a stop string "</s>" stays
// readable in the child's log).
func jsonValue(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// rulePaths are the llama-server paths whose bodies rules change: every model-routed POST
// (proxiedPOST) that makes an answer of the model, whether it came as itself, through
// /upstream/{model}, or translated from Ollama's API. Those that only tokenize, detokenize, apply
// the chat template or count tokens are left as they are.
var rulePaths = func() map[string]bool {
	m := make(map[string]bool, len(proxiedPOST))
	for _, p := range proxiedPOST {
		m[p] = true
	}
	for _, p := range []string{"/tokenize", "/detokenize", "/apply-template", "/v1/messages/count_tokens"} {
		delete(m, p)
	}
	return m
}()

// applyRules is body as model id's rules make it, for a request to be proxied to path ("" = the
// request's own). With no rules for id, or for another path, body is returned as it is without
// allocating. A body the rules cannot splice is an error wrapping errInvalidJSON (400).
func (srv *Server) applyRules(r *http.Request, id string, body []byte, path string) ([]byte, error) {
	rules := srv.o.Rules[id]
	if rules == nil || r.Method != http.MethodPost {
		return body, nil
	}
	if path == "" {
		path = r.URL.Path
	}
	if !rulePaths[path] {
		return body, nil
	}
	out, err := rules.Apply(body)
	if err != nil {
		return nil, fmt.Errorf("%w (model %q has request rules, and they apply to a JSON object)", err, id)
	}
	return out, nil
}

// ruleAction is what a rule does to one member.
type ruleAction uint8

const (
	keep ruleAction = iota
	drop
	replace // its value becomes val
)

// Apply returns body with r's rules applied to its top-level fields. strip_params' fields are
// removed (every occurrence). A set_params field replaces the value of the first field of its name,
// in its place (later ones are removed), or is added at the end; set_params wins over strip_params
// and default_params of the same name. A default_params field counts as given when the last field
// of its name, or of a synonym (ruleSynonyms: max_tokens for n_predict), has a value other than
// null (the last of duplicates is the one llama-server reads), or set_params sets a synonym: then
// nothing changes; else it replaces the first field of its name (later ones are removed) or is
// added at the end. Fields are added after the last field kept, in
// name order. When nothing changes, body itself is returned. A body that is not one JSON object is
// an error wrapping errInvalidJSON.
func (r *Rules) Apply(body []byte) ([]byte, error) {
	var arr [16]member
	obj, err := scanObject(body, r.names, arr[:0])
	if err != nil {
		return nil, err
	}
	ms := obj.named
	// What each member is to the rules: a set_params field, a stripped one, a default_params one.
	const (
		none = iota
		isSet
		isStrip
		isDefault
	)
	type match struct {
		kind, i int
	}
	matches := make([]match, len(ms))
	for j, m := range ms {
		name := m.name
		if i := slices.IndexFunc(r.set, func(f ruleField) bool { return f.name == name }); i >= 0 {
			matches[j] = match{isSet, i}
		} else if slices.Contains(r.strip, name) {
			matches[j] = match{isStrip, 0}
		} else if i := slices.IndexFunc(r.defaults, func(f ruleField) bool { return f.name == name }); i >= 0 {
			matches[j] = match{isDefault, i}
		}
	}
	// gives: the body gives name a value, as llama-server and encoding/json read it: the last field
	// of that name is not null (and no rule sets or strips it).
	gives := func(name string) bool {
		for j := len(ms) - 1; j >= 0; j-- {
			if ms[j].name == name {
				k := matches[j].kind
				return k != isSet && k != isStrip && string(body[ms[j].vs:ms[j].ve]) != "null"
			}
		}
		return false
	}
	given := make([]bool, len(r.defaults)) // the body or set_params gives that default's setting
	for i, d := range r.defaults {
		given[i] = slices.ContainsFunc(r.set, func(f ruleField) bool { return slices.Contains(d.also, f.name) }) ||
			gives(d.name) || slices.ContainsFunc(d.also, gives)
	}
	acts := make([]ruleAction, len(ms))
	vals := make([][]byte, len(ms))
	seenSet := make([]bool, len(r.set))
	seenDefault := make([]bool, len(r.defaults))
	changed := false
	for j, m := range ms {
		switch mt := matches[j]; mt.kind {
		case isSet:
			if seenSet[mt.i] {
				acts[j] = drop
			} else {
				seenSet[mt.i] = true
				acts[j], vals[j] = replace, r.set[mt.i].value
			}
		case isStrip:
			acts[j] = drop
		case isDefault:
			switch {
			case given[mt.i]:
			case seenDefault[mt.i]:
				acts[j] = drop
			default:
				seenDefault[mt.i] = true
				acts[j], vals[j] = replace, r.defaults[mt.i].value
			}
		}
		if acts[j] == replace && bytes.Equal(vals[j], body[m.vs:m.ve]) {
			acts[j], vals[j] = keep, nil
		}
		changed = changed || acts[j] != keep
	}
	var add [][]byte
	for i, f := range r.set {
		if !seenSet[i] {
			add = append(add, f.field)
		}
	}
	for i, f := range r.defaults {
		if !given[i] && !seenDefault[i] && !slices.ContainsFunc(r.set, func(s ruleField) bool { return s.name == f.name }) {
			add = append(add, f.field)
		}
	}
	if !changed && len(add) == 0 {
		return body, nil
	}
	return splice(body, obj, acts, vals, add), nil
}

// splice writes body with each named member kept, dropped (with the comma that joined it to a
// field kept) or given a new value, and add appended after the last kept field's value: the
// fields kept, joined by single commas, each with its own whitespace.
func splice(body []byte, obj object, acts []ruleAction, vals [][]byte, add [][]byte) []byte {
	ms := obj.named
	// The last field kept: the last field, unless it and those before it are dropped.
	last, k := obj.n-1, len(ms)-1
	for ; k >= 0 && ms[k].idx == last && acts[k] == drop; k-- {
		last--
	}
	at := obj.open + 1 // where the added fields go: after the last kept value, or after '{'
	switch {
	case last == obj.n-1 && last >= 0:
		at = obj.lastVe
	case last >= 0:
		at = ms[k+1].prevVe
	}
	n := len(body)
	for _, a := range add {
		n += len(a) + 1
	}
	for j, m := range ms {
		switch acts[j] {
		case replace:
			n += len(vals[j]) - (m.ve - m.vs)
		case drop:
			n -= m.end - m.start
		}
	}
	out := make([]byte, 0, max(n, 2))
	pos := 0
	added := false
	insert := func() {
		out = append(out, body[pos:at]...)
		pos = at
		for i, a := range add {
			if i > 0 || last >= 0 {
				out = append(out, ',')
			}
			out = append(out, a...)
		}
		added = true
	}
	for j, m := range ms {
		if !added && m.idx > last {
			insert()
		}
		switch acts[j] {
		case replace:
			out = append(out, body[pos:m.vs]...)
			out = append(out, vals[j]...)
			pos = m.ve
		case drop:
			from, to := m.start, m.end
			switch {
			case m.idx < last: // a kept field follows: the comma after it goes
				to++
			case m.idx > 0: // none follows: the comma before it goes
				from--
			}
			out = append(out, body[pos:from]...)
			pos = to
		}
	}
	if !added {
		insert()
	}
	return append(out, body[pos:]...)
}

// underRules is an Ollama model's own defaults (its Modelfile's parameters) less those whose
// llama-server field model id's default_params give: the configuration's defaults come before the
// model file's, and a request's own options before both. defaults itself is never changed.
func (srv *Server) underRules(id string, defaults map[string]any) map[string]any {
	r := srv.o.Rules[id]
	if r == nil || len(r.defaults) == 0 || len(defaults) == 0 {
		return defaults
	}
	out := maps.Clone(defaults)
	maps.DeleteFunc(out, func(k string, _ any) bool {
		f, _, ok := ollama.OptionField(k)
		return ok && slices.ContainsFunc(r.defaults, func(d ruleField) bool { return d.name == f || slices.Contains(d.also, f) })
	})
	return out
}
