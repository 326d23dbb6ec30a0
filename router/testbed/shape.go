package testbed

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// ShapeDiffs compares two JSON documents field by field, recursively: every field of want must be
// in got with the same JSON type; array elements are compared with got's first element; a null in
// want fits anything; extra fields of got are fine. Fields named in skip, by path ("data[].preset"),
// are not compared. It returns one line per difference.
func ShapeDiffs(want, got []byte, skip map[string]bool) ([]string, error) {
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		return nil, fmt.Errorf("want: %w", err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return nil, fmt.Errorf("got: %w", err)
	}
	return shapeDiffs("", w, g, skip), nil
}

// kindOf names a decoded JSON value's type.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func shapeDiffs(path string, want, got any, skip map[string]bool) []string {
	if skip[path] || want == nil {
		return nil
	}
	if kindOf(want) != kindOf(got) {
		return []string{fmt.Sprintf("%s: %s, want %s", path, kindOf(got), kindOf(want))}
	}
	var diffs []string
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := strings.TrimPrefix(path+"."+k, ".")
			if skip[p] {
				continue
			}
			gv, ok := g[k]
			if !ok {
				diffs = append(diffs, p+": missing")
				continue
			}
			diffs = append(diffs, shapeDiffs(p, w[k], gv, skip)...)
		}
	case []any:
		if g := got.([]any); len(w) > 0 && len(g) > 0 {
			diffs = append(diffs, shapeDiffs(path+"[]", w[0], g[0], skip)...)
		}
	}
	return diffs
}
