package config

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/llamatray/llamatray/router/internal/textdist"
)

// keyInfo is where one key appears in the file and what kind of value it holds.
type keyInfo struct {
	line int
	kind unstable.Kind
	raw  string
}

// keyIndex maps a key path (parts joined by NUL) to where it appears in the file.
type keyIndex map[string]keyInfo

// indexKeys records every table and key of a document that go-toml already accepted.
func indexKeys(data []byte) keyIndex {
	idx := keyIndex{}
	lineOf := func(off int) int { return 1 + bytes.Count(data[:min(off, len(data))], []byte("\n")) }
	var p unstable.Parser
	p.Reset(data)
	var table []string
	var walk func(prefix []string, kv *unstable.Node)
	walk = func(prefix []string, kv *unstable.Node) {
		parts, off := keyParts(kv)
		full := append(append([]string(nil), prefix...), parts...)
		v := kv.Value()
		for i := len(prefix) + 1; i < len(full); i++ { // intermediate dotted tables
			idx.add(full[:i], keyInfo{line: lineOf(off), kind: unstable.Table})
		}
		idx.add(full, keyInfo{line: lineOf(off), kind: v.Kind, raw: string(v.Data)})
		if v.Kind == unstable.InlineTable {
			it := v.Children()
			for it.Next() {
				if n := it.Node(); n.Kind == unstable.KeyValue {
					walk(full, n)
				}
			}
		}
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts, off := keyParts(e)
			table = parts
			idx.add(parts, keyInfo{line: lineOf(off), kind: unstable.Table})
		case unstable.KeyValue:
			walk(table, e)
		}
	}
	return idx
}

func keyParts(n *unstable.Node) ([]string, int) {
	var parts []string
	off := -1
	it := n.Key()
	for it.Next() {
		k := it.Node()
		if off < 0 {
			off = int(k.Raw.Offset)
		}
		parts = append(parts, string(k.Data))
	}
	return parts, max(off, 0)
}

func (idx keyIndex) add(key []string, ki keyInfo) {
	k := strings.Join(key, "\x00")
	if _, ok := idx[k]; !ok {
		idx[k] = ki
	}
}

// line returns the line of key, or of its nearest enclosing table, or 0.
func (idx keyIndex) line(key []string) int {
	for n := len(key); n > 0; n-- {
		if ki, ok := idx[strings.Join(key[:n], "\x00")]; ok {
			return ki.line
		}
	}
	return 0
}

// isDurationKey reports whether a key path holds a Duration.
func isDurationKey(key []string) bool {
	switch len(key) {
	case 1:
		switch key[0] {
		case "idle_sleep", "idle_unload", "queue_timeout", "fair_wait", "load_timeout", "stop_timeout":
			return true
		}
	case 3:
		return key[0] == "models" && (key[2] == "idle_sleep" || key[2] == "idle_unload")
	case 5: // a variant's
		return key[0] == "models" && key[2] == "variants" && (key[4] == "idle_sleep" || key[4] == "idle_unload")
	}
	return false
}

// isSizeKey reports whether a key path holds a Size.
func isSizeKey(key []string) bool {
	return len(key) == 1 && (key[0] == "memory_limit" || key[0] == "memory_reserve" || key[0] == "body_limit") ||
		len(key) == 2 && key[0] == "device_memory_limit"
}

// valueKinds checks what go-toml cannot report well for sizes and durations: a duration written
// as a bare integer other than 0 and -1 (it would be read as nanoseconds), and a size or
// duration written as a float or another non-string value.
func (idx keyIndex) valueKinds(name string) []error {
	var errs []error
	for k, ki := range idx {
		key := strings.Split(k, "\x00")
		dur, size := isDurationKey(key), isSizeKey(key)
		if !dur && !size || ki.kind == unstable.String {
			continue
		}
		var reason string
		switch {
		case ki.kind == unstable.Integer && size:
			continue
		case ki.kind == unstable.Integer:
			n, err := strconv.ParseInt(strings.ReplaceAll(ki.raw, "_", ""), 0, 64)
			if err == nil && (n == 0 || n == -1) {
				continue
			}
			reason = fmt.Sprintf("a duration needs a unit, like \"%ss\" or \"%sm\" (only 0 and -1 go without one)", ki.raw, ki.raw)
		case dur:
			reason = fmt.Sprintf("expected a quoted duration like \"5m\", found %s", describeKind(ki))
		default:
			reason = fmt.Sprintf("expected a quoted size like \"6GiB\" or a whole number of bytes, found %s", describeKind(ki))
		}
		errs = append(errs, &Error{File: name, Line: ki.line, Key: joinKey(key), Reason: reason})
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].(*Error).Line < errs[j].(*Error).Line })
	return errs
}

func describeKind(ki keyInfo) string {
	switch ki.kind {
	case unstable.Float:
		return "the number " + ki.raw
	case unstable.Bool:
		return ki.raw
	case unstable.Array:
		return "a list"
	case unstable.InlineTable, unstable.Table:
		return "a table"
	default:
		return "a date or time"
	}
}

// knownKeys lists the keys a table accepts, from the struct tags.
func knownKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ","); tag != "" {
			keys = append(keys, tag)
		}
	}
	return keys
}

// suggestKey proposes a correction for an unknown key: the key with its first unknown part
// replaced by the closest known name, or "" when nothing is close.
func suggestKey(key []string) string {
	tables := map[int]reflect.Type{0: reflect.TypeFor[Config]()} // by the index of the part a table names
	switch {
	case len(key) >= 2 && key[0] == "defaults":
		tables[1] = reflect.TypeFor[ChildDefaults]()
	case len(key) >= 5 && key[0] == "models" && key[2] == "variants":
		tables[4] = reflect.TypeFor[Model]()
		fallthrough
	case len(key) >= 3 && key[0] == "models":
		tables[2] = reflect.TypeFor[Model]()
	}
	for at := range len(key) {
		if tables[at] == nil {
			continue
		}
		keys := knownKeys(tables[at])
		if slices.Contains(keys, key[at]) {
			continue
		}
		best, bestD := "", 3
		for _, k := range keys {
			if d := textdist.Levenshtein(strings.ToLower(key[at]), k); d < bestD {
				best, bestD = k, d
			}
		}
		if best == "" {
			return ""
		}
		return strings.Join(slices.Concat(key[:at], []string{best}, key[at+1:]), ".")
	}
	return ""
}
