package testbed

import "testing"

// A missing field, a changed type and a nested difference are found; extra fields, null-valued
// wanted fields and skipped paths are not differences.
func TestShapeDiffs(t *testing.T) {
	for _, c := range []struct {
		want, got string
		diffs     int
	}{
		{`{"a":1,"b":"x"}`, `{"a":2,"b":"y","extra":true}`, 0},
		{`{"a":1,"b":"x"}`, `{"a":2}`, 1},
		{`{"a":1}`, `{"a":"1"}`, 1},
		{`{"a":{"b":[{"c":true}]}}`, `{"a":{"b":[{"c":1}]}}`, 1},
		{`{"a":null}`, `{"a":{"x":1}}`, 0},
		{`{"a":[]}`, `{"a":[1]}`, 0},
		{`{"skip":{"x":1}}`, `{}`, 0},
		{`{"o":{"skip":1,"n":1}}`, `{"o":{}}`, 1},
	} {
		d, err := ShapeDiffs([]byte(c.want), []byte(c.got), map[string]bool{"skip": true, "o.skip": true})
		if err != nil || len(d) != c.diffs {
			t.Errorf("%s vs %s: %q %v", c.want, c.got, d, err)
		}
	}
	if _, err := ShapeDiffs([]byte(`{`), []byte(`{}`), nil); err == nil {
		t.Error("bad JSON accepted")
	}
}
