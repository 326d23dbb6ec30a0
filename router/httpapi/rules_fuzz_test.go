package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// fuzzRules are the rule sets FuzzRulesApply picks from: set, strip and default, alone and together,
// over the same names and over synonyms.
var fuzzRules = []struct {
	set      map[string]any
	strip    []string
	defaults map[string]any
}{
	{map[string]any{"x": 1.5}, nil, nil},
	{nil, []string{"x", "seed"}, nil},
	{nil, nil, map[string]any{"x": "d", "top_k": int64(40)}},
	{map[string]any{"x": []any{"a", 2.0}}, []string{"seed"}, map[string]any{"top_k": int64(40)}},
	{map[string]any{"seed": int64(1)}, []string{"seed"}, map[string]any{"seed": int64(2)}},
	{nil, []string{"seed"}, map[string]any{"seed": int64(2)}},
	{nil, nil, map[string]any{"n_predict": int64(64), "stop": []any{"###"}}},
	{map[string]any{"max_tokens": int64(3)}, nil, map[string]any{"n_predict": int64(64)}},
	{nil, []string{"max_tokens"}, map[string]any{"n_predict": int64(64), "x": map[string]any{"k": true}}},
}

// decodeTop is a body's top-level fields as encoding/json reads them (the last of a duplicate
// wins), numbers as written.
func decodeTop(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("null is not an object")
	}
	return m, nil
}

// rulesOnDecoded is what the rules do to a decoded body: strip, then set, then each default whose
// setting (its name or a synonym) the body gives no non-null value for, nor set_params sets.
func rulesOnDecoded(t *testing.T, r *Rules, in map[string]any) map[string]any {
	t.Helper()
	out := maps.Clone(in)
	for _, n := range r.strip {
		delete(out, n)
	}
	setName := func(n string) bool { return slices.ContainsFunc(r.set, func(f ruleField) bool { return f.name == n }) }
	for _, f := range r.set {
		v, err := decodeTop(append(append([]byte(`{"v":`), f.value...), '}'))
		if err != nil {
			t.Fatal(err)
		}
		out[f.name] = v["v"]
	}
	for _, d := range r.defaults {
		if setName(d.name) {
			continue
		}
		given := false
		for _, n := range append([]string{d.name}, d.also...) {
			if setName(n) {
				given = true
			}
			if v, ok := in[n]; ok && v != nil && !slices.Contains(r.strip, n) {
				given = true
			}
		}
		if !given {
			v, _ := decodeTop(append(append([]byte(`{"v":`), d.value...), '}'))
			out[d.name] = v["v"]
		}
	}
	return out
}

// FuzzRulesApply: for any body encoding/json reads as one object, the spliced body reads as the
// rules applied to what it read; for any other body encoding/json accepts, Apply refuses it.
func FuzzRulesApply(f *testing.F) {
	for _, s := range []string{
		`{}`, ` { } `, `{"x":1}`, `{"x":1,"x":2}`, `{"x":null,"x":3}`, `{"x":3,"x":null}`,
		`{"\u0078":1,"x":2}`, `{"se\u0065d":[1,{"x":2}],"top_k":null}`, `{"a":"}{,\"x\":1","x":{}}`,
		`{"n_predict":null,"max_tokens":5}`, `{"max_tokens":5,"max_tokens":null}`, `{"stop_sequences":["a"],"stop":null}`,
		"{\n\t\"model\" : \"m\" ,\r\n \"seed\" :-0.5e+3 }\n", `{"top_k":-0,"x":1E2}`, `[{"x":1}]`, `"x"`, `null`, `12`,
		`{"x":1} {"x":2}`, `{"x":"\ud800"}`, `{"model":"m","stream":true,"x":false}`,
	} {
		for i := range fuzzRules {
			f.Add([]byte(s), uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, sel uint8) {
		fr := fuzzRules[int(sel)%len(fuzzRules)]
		r := mustRules(t, fr.set, fr.strip, fr.defaults)
		if !json.Valid(body) {
			return // the scanner may be laxer (control bytes in strings); the child refuses those
		}
		in, decErr := decodeTop(body)
		got, err := r.Apply(body)
		if decErr != nil {
			if err == nil {
				t.Fatalf("Apply(%q) accepted a body that is not an object: %q", body, got)
			}
			if !errors.Is(err, errInvalidJSON) {
				t.Fatalf("Apply(%q) err = %v, want errInvalidJSON", body, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Apply(%q): %v", body, err)
		}
		if !json.Valid(got) {
			t.Fatalf("Apply(%q) = %q, not valid JSON", body, got)
		}
		out, err := decodeTop(got)
		if err != nil {
			t.Fatalf("Apply(%q) = %q: %v", body, got, err)
		}
		if want := rulesOnDecoded(t, r, in); !reflect.DeepEqual(out, want) {
			t.Fatalf("rules %+v\nApply(%q)\n = %q\nreads %v\n want %v", fr, body, got, out, want)
		}
		for _, reserved := range []string{"model", "stream", "messages", "prompt", "input", "system"} {
			if !reflect.DeepEqual(in[reserved], out[reserved]) {
				t.Fatalf("Apply(%q) changed %q: %q", body, reserved, got)
			}
		}
	})
}

// TestRulesApplyOneCopy: a big body is spliced into one buffer of its size, whatever the rules
// keep, drop or replace (a kept field's bytes are not counted out of it, so append never regrows it).
func TestRulesApplyOneCopy(t *testing.T) {
	big := bytes.Repeat([]byte("A"), 1<<20)
	body := slices.Concat([]byte(`{"image":"`), big, []byte(`","temperature":1,"seed":3,"text":"`), big, []byte(`"}`))
	r := mustRules(t, map[string]any{"temperature": 0.2}, []string{"seed"}, map[string]any{"top_k": int64(40)})
	got, err := r.Apply(body)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(body) - len(`1,"seed":3`) + len(`0.2,"top_k":40`); len(got) != want || cap(got) > want+64 {
		t.Errorf("Apply: len %d cap %d, want len %d and no spare megabytes", len(got), cap(got), want)
	}
}

// TestRulesApplyManyFields: a body of a hundred thousand small fields costs the output and a few
// allocations, not bookkeeping per field (a 64 MiB body of them once took gigabytes).
func TestRulesApplyManyFields(t *testing.T) {
	body := slices.Concat([]byte(`{"seed":1,`), bytes.Repeat([]byte(`"ab":1,`), 100_000), []byte(`"z":1}`))
	r := mustRules(t, map[string]any{"temperature": 0.2}, []string{"seed"}, map[string]any{"top_k": int64(40)})
	want := slices.Concat([]byte(`{`), bytes.Repeat([]byte(`"ab":1,`), 100_000), []byte(`"z":1,"temperature":0.2,"top_k":40}`))
	allocs := testing.AllocsPerRun(3, func() {
		got, err := r.Apply(body)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Apply: %v, %.40q…", err, got)
		}
	})
	if allocs > 10 {
		t.Errorf("Apply of %d fields: %v allocations, want a few", 100_002, allocs)
	}
}
