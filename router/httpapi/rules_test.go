package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func mustRules(t testing.TB, set map[string]any, strip []string, defaults map[string]any) *Rules {
	t.Helper()
	r, err := NewRules(set, strip, defaults)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRulesApply(t *testing.T) {
	temp := map[string]any{"temperature": 0.2}
	tests := []struct {
		name     string
		set      map[string]any
		strip    []string
		defaults map[string]any
		body     string
		want     string
	}{
		{"set replaces in place", temp, nil, nil,
			`{"model":"m","temperature":0.9,"messages":[]}`, `{"model":"m","temperature":0.2,"messages":[]}`},
		{"set added at the end", temp, nil, nil,
			`{"model":"m","messages":[]}`, `{"model":"m","messages":[],"temperature":0.2}`},
		{"set equal value: body untouched", temp, nil, nil,
			`{"temperature":0.2, "x":1}`, `{"temperature":0.2, "x":1}`},
		{"set duplicate keys: first replaced, rest removed", temp, nil, nil,
			`{"temperature":1,"a":1,"temperature":2}`, `{"temperature":0.2,"a":1}`},
		{"set nested values", map[string]any{"response_format": map[string]any{"type": "json_object"}, "stop": []any{"</s>", "###"}, "n_predict": int64(3), "cache_prompt": false}, nil, nil,
			`{"model":"m","stop":"x"}`, `{"model":"m","stop":["</s>","###"],"cache_prompt":false,"n_predict":3,"response_format":{"type":"json_object"}}`},
		{"set unicode", map[string]any{"grammar": "ünï\u2028\"q\""}, nil, nil,
			`{"prompt":"日本語 ✓"}`, `{"prompt":"日本語 ✓","grammar":"ünï\u2028\"q\""}`},
		{"strip one", nil, []string{"seed"}, nil,
			`{"seed":42,"prompt":"p"}`, `{"prompt":"p"}`},
		{"strip last", nil, []string{"seed"}, nil,
			`{"prompt":"p","seed":42}`, `{"prompt":"p"}`},
		{"strip every duplicate", nil, []string{"seed"}, nil,
			`{"seed":1,"prompt":"p","seed":{"deep":[1,2]}}`, `{"prompt":"p"}`},
		{"strip the only field", nil, []string{"seed"}, nil,
			`{ "seed" : 1 }`, `{}`},
		{"strip absent: untouched", nil, []string{"seed"}, nil,
			`{"prompt":"p"}`, `{"prompt":"p"}`},
		{"strip escaped key", nil, []string{"seed"}, nil,
			`{"s\u0065ed":1,"prompt":"p"}`, `{"prompt":"p"}`},
		{"strip matches a whole name only", nil, []string{"seed"}, nil,
			`{"seeds":1,"a_seed":2}`, `{"seeds":1,"a_seed":2}`},
		{"default added", nil, nil, map[string]any{"top_k": int64(40)},
			`{"prompt":"p"}`, `{"prompt":"p","top_k":40}`},
		{"default given: untouched", nil, nil, map[string]any{"top_k": int64(40)},
			`{"top_k":5,"prompt":"p"}`, `{"top_k":5,"prompt":"p"}`},
		{"default given by an escaped key", nil, nil, map[string]any{"top_k": int64(40)},
			`{"top\u005fk":5}`, `{"top\u005fk":5}`},
		{"default replaces null", nil, nil, map[string]any{"top_k": int64(40)},
			`{"top_k":null,"prompt":"p"}`, `{"top_k":40,"prompt":"p"}`},
		{"default: a later value beats a null", nil, nil, map[string]any{"top_k": int64(40)},
			`{"top_k":null,"top_k":7}`, `{"top_k":null,"top_k":7}`},
		{"default: a later null beats a value (the last one is read)", nil, nil, map[string]any{"top_k": int64(40)},
			`{"top_k":7,"a":1,"top_k":null}`, `{"top_k":40,"a":1}`},
		{"default: a synonym's later null gives nothing", nil, nil, map[string]any{"n_predict": int64(64)},
			`{"max_tokens":5,"max_tokens":null}`, `{"max_tokens":5,"max_tokens":null,"n_predict":64}`},
		{"default: two nulls become one value", nil, nil, map[string]any{"top_k": int64(40)},
			`{"top_k":null,"a":1,"top_k":null}`, `{"top_k":40,"a":1}`},
		{"default given by a synonym", nil, nil, map[string]any{"n_predict": int64(64), "stop": []any{"###"}},
			`{"max_tokens":5,"stop_sequences":["x"]}`, `{"max_tokens":5,"stop_sequences":["x"]}`},
		{"default: a null synonym gives nothing", nil, nil, map[string]any{"n_predict": int64(64)},
			`{"max_completion_tokens":null}`, `{"max_completion_tokens":null,"n_predict":64}`},
		{"default: a set synonym gives it", map[string]any{"max_tokens": int64(3)}, nil, map[string]any{"n_predict": int64(64)},
			`{}`, `{"max_tokens":3}`},
		{"default: a stripped synonym gives nothing", nil, []string{"max_tokens"}, map[string]any{"n_predict": int64(64)},
			`{"max_tokens":5}`, `{"n_predict":64}`},
		{"empty object", temp, nil, nil,
			`{}`, `{"temperature":0.2}`},
		{"empty object with whitespace", temp, nil, nil,
			" \n{ }\n", " \n{\"temperature\":0.2 }\n"},
		{"whitespace kept, fields added after the last value", temp, []string{"seed"}, nil,
			"{\n  \"model\" : \"m\",\n  \"seed\": 1,\n  \"n\": 2\n}\n", "{\n  \"model\" : \"m\",\n  \"n\": 2,\"temperature\":0.2\n}\n"},
		{"all three", map[string]any{"temperature": 0.2}, []string{"logit_bias", "seed"}, map[string]any{"top_k": int64(40), "min_p": 0.05},
			`{"model":"m","seed":9,"messages":[{"role":"user","content":"hi \"x\" {,}"}],"temperature":1.5,"logit_bias":{"1":2},"min_p":0.1}`,
			`{"model":"m","messages":[{"role":"user","content":"hi \"x\" {,}"}],"temperature":0.2,"min_p":0.1,"top_k":40}`},
		{"set wins over strip and default", map[string]any{"seed": int64(1)}, []string{"seed"}, map[string]any{"seed": int64(2)},
			`{"seed":5}`, `{"seed":1}`},
		{"strip and default: the default", nil, []string{"seed"}, map[string]any{"seed": int64(2)},
			`{"seed":5,"a":1}`, `{"a":1,"seed":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustRules(t, tt.set, tt.strip, tt.defaults)
			got, err := r.Apply([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Apply(%s)\n got %s\nwant %s", tt.body, got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("not valid JSON: %s", got)
			}
		})
	}
}

func TestRulesUntouchedIsSameSlice(t *testing.T) {
	r := mustRules(t, nil, []string{"seed"}, map[string]any{"top_k": int64(1)})
	body := []byte(`{"top_k":3, "prompt": "p"}`)
	got, err := r.Apply(body)
	if err != nil || &got[0] != &body[0] || len(got) != len(body) {
		t.Fatalf("Apply = %q, %v; want the body itself", got, err)
	}
}

func TestRulesBadBody(t *testing.T) {
	r := mustRules(t, map[string]any{"temperature": 0.2}, nil, nil)
	for _, body := range []string{``, `  `, `[1]`, `"s"`, `{"a":1`, `{"a":1}x`, `{"a":}`, `{"a":1,}`, `{a:1}`, `null`, `{"a":"\x"}`} {
		if _, err := r.Apply([]byte(body)); !errors.Is(err, errInvalidJSON) {
			t.Errorf("Apply(%q) err = %v, want errInvalidJSON", body, err)
		}
	}
}

func TestNewRules(t *testing.T) {
	if r, err := NewRules(nil, nil, map[string]any{}); r != nil || err != nil {
		t.Errorf("no rules = %v, %v; want nil, nil", r, err)
	}
	if _, err := NewRules(map[string]any{"": 1.0}, nil, nil); err == nil {
		t.Error("an empty name was accepted")
	}
	if _, err := NewRules(map[string]any{"x": func() {}}, nil, nil); err == nil {
		t.Error("a func value was accepted")
	}
	if _, err := NewRules(nil, []string{""}, nil); err == nil {
		t.Error("an empty strip name was accepted")
	}
}

// TestApplyRulesNoAllocation: a model without rules costs the proxy no allocation.
func TestApplyRulesNoAllocation(t *testing.T) {
	server := &Server{o: Options{Rules: RuleSet{"other": mustRules(t, map[string]any{"a": 1.0}, nil, nil)}}}
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	body := []byte(`{"model":"m1","messages":[]}`)
	allocs := testing.AllocsPerRun(1000, func() {
		out, err := server.applyRules(r, "m1", body, "")
		if err != nil || len(out) != len(body) {
			t.Fatal("changed")
		}
	})
	if allocs != 0 {
		t.Errorf("applyRules without rules: %v allocations, want 0", allocs)
	}
}

func BenchmarkRulesApply(b *testing.B) {
	r := mustRules(b, map[string]any{"temperature": 0.2}, []string{"seed"}, map[string]any{"top_k": int64(40)})
	body := []byte(`{"model":"m","seed":9,"messages":[{"role":"user","content":"hello there, how are you today?"}],"temperature":1.5,"stream":true}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Apply(body); err != nil {
			b.Fatal(err)
		}
	}
}
