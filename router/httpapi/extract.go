package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/llamatray/llamatray/router/internal/h1"
)

// errInvalidJSON marks a request body that is not a JSON object. Every error scanBody returns wraps it.
var errInvalidJSON = errors.New("invalid JSON body")

// maxJSONDepth bounds the nesting the scanner accepts, like encoding/json does.
const maxJSONDepth = 10000

// bodyFields are the top-level fields the router reads from a request body.
type bodyFields struct {
	Model  string // "" when absent or null
	Stream bool   // "stream": true
}

// scanBody reads the top-level "model" and "stream" fields of a JSON object body without decoding
// anything else: other values are skipped in place (scanObject), so a body carrying megabytes of
// inline base64 images costs one pass with no allocation. An empty or all-whitespace body has no
// model (""). A body that is not one well-formed JSON object, or whose "model" is neither a string
// nor null, is an error wrapping errInvalidJSON. When a field appears more than once the last one
// wins, as with encoding/json.
func scanBody(body []byte) (bodyFields, error) {
	var f bodyFields
	s := scanner{b: body}
	if s.ws(); s.i == len(body) {
		return f, nil
	}
	var arr [4]member
	obj, err := scanObject(body, bodyNames, arr[:0])
	if err != nil {
		return f, err
	}
	var modelErr error // a non-string "model", unless a later one replaces it
	for _, m := range obj.named {
		v := body[m.vs:m.ve]
		if m.name == "stream" {
			f.Stream = string(v) == "true"
			continue
		}
		f.Model, modelErr = "", nil
		switch v[0] {
		case 'n': // null
		case '"':
			if lit := v[1 : len(v)-1]; bytes.IndexByte(lit, '\\') < 0 && utf8.Valid(lit) {
				f.Model = string(lit)
			} else if err := json.Unmarshal(v, &f.Model); err != nil { // escapes, invalid UTF-8: as encoding/json decodes them
				return f, fmt.Errorf("%w: bad \"model\" string: %w", errInvalidJSON, err)
			}
		default:
			modelErr = fmt.Errorf("%w: \"model\" must be a string", errInvalidJSON)
		}
	}
	return f, modelErr
}

// bodyNames are the fields scanBody reads.
var bodyNames = []string{"model", "stream"}

// scanner is a validating JSON skipper over a byte slice.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) fail(msg string) error {
	return fmt.Errorf("%w: %s at offset %d", errInvalidJSON, msg, s.i)
}

// peek returns the current byte, or 0 at the end.
func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// str consumes a string literal and returns the bounds of its contents and whether it has escapes.
// Runs between quotes and backslashes are found with bytes.IndexByte, so long base64 or text strings
// cost one linear pass.
func (s *scanner) str() (start, end int, escaped bool, err error) {
	if s.peek() != '"' {
		return 0, 0, false, s.fail("expected a string")
	}
	s.i++
	start = s.i
outer:
	for {
		rest := s.b[s.i:]
		q := bytes.IndexByte(rest, '"')
		if q < 0 {
			s.i = len(s.b)
			return 0, 0, false, s.fail("unterminated string")
		}
		for j := 0; ; {
			bs := bytes.IndexByte(rest[j:q], '\\')
			if bs < 0 {
				s.i += q + 1
				return start, s.i - 1, escaped, nil
			}
			escaped = true
			p := j + bs + 1 // the escaped character
			if p == q {
				// \" : the quote found is escaped; look for the next one.
				s.i += q + 1
				continue outer
			}
			switch rest[p] {
			case '\\', '/', 'b', 'f', 'n', 'r', 't':
				j = p + 1
			case 'u':
				if p+5 > q {
					s.i += p
					return 0, 0, false, s.fail("bad \\u escape")
				}
				for _, h := range rest[p+1 : p+5] {
					if !h1.IsHex(h) {
						s.i += p
						return 0, 0, false, s.fail("bad \\u escape")
					}
				}
				j = p + 5
			default:
				s.i += p
				return 0, 0, false, s.fail("bad escape")
			}
		}
	}
}

// value skips one JSON value. Nesting is tracked with an explicit stack, so depth costs no recursion.
func (s *scanner) value() error {
	var stack []byte // open containers: '{' or '['
	for {
		// One scalar or the opening of a container.
		switch c := s.peek(); c {
		case '{', '[':
			if len(stack)+1 >= maxJSONDepth { // +1: the top-level object
				return s.fail("nesting too deep")
			}
			stack = append(stack, c)
			s.i++
			s.ws()
			if (c == '{' && s.peek() == '}') || (c == '[' && s.peek() == ']') {
				s.i++
				stack = stack[:len(stack)-1]
				break
			}
			if c == '{' {
				if _, _, _, err := s.key(); err != nil {
					return err
				}
			}
			continue
		case '"':
			if _, _, _, err := s.str(); err != nil {
				return err
			}
		case 't', 'f', 'n':
			if err := s.literal(); err != nil {
				return err
			}
		default:
			if err := s.number(); err != nil {
				return err
			}
		}
		// After a complete value: close containers or move to the next element.
		for {
			if len(stack) == 0 {
				return nil
			}
			s.ws()
			top := stack[len(stack)-1]
			c := s.peek()
			switch {
			case c == ',':
				s.i++
				s.ws()
				if top == '{' {
					if _, _, _, err := s.key(); err != nil {
						return err
					}
				}
			case (top == '{' && c == '}') || (top == '[' && c == ']'):
				s.i++
				stack = stack[:len(stack)-1]
				continue
			default:
				return s.fail("expected ',' or end of container")
			}
			break
		}
	}
}

// key consumes an object key and its colon, leaving the scanner at the value; it returns what str
// returns of the key.
func (s *scanner) key() (start, end int, escaped bool, err error) {
	if start, end, escaped, err = s.str(); err != nil {
		return 0, 0, false, err
	}
	s.ws()
	if s.peek() != ':' {
		return 0, 0, false, s.fail("expected ':' after object key")
	}
	s.i++
	s.ws()
	return start, end, escaped, nil
}

// literal consumes true, false or null.
func (s *scanner) literal() error {
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
			s.i += len(lit)
			return nil
		}
	}
	return s.fail("invalid literal")
}

// number consumes a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	start := s.i
	if s.peek() == '-' {
		s.i++
	}
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case '1' <= c && c <= '9':
		s.digits()
	default:
		s.i = start
		return s.fail("invalid value")
	}
	if s.peek() == '.' {
		s.i++
		if s.digits() == 0 {
			return s.fail("invalid number")
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if s.digits() == 0 {
			return s.fail("invalid number")
		}
	}
	return nil
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// member is one top-level field of a body that a caller names (a rule: by its name or a synonym): bytes
// [start,end) are the field with the whitespace around it (between the '{' or ',' before it and
// the ',' or '}' after it); [vs,ve) its value; idx its place among all the body's fields, and
// prevVe where the value of the field before it ends (-1 for the first). Fields no rule names are
// counted, never listed, so a body of millions of fields costs no bookkeeping per field.
type member struct {
	idx, start, vs, ve, end, prevVe int
	name                            string
}

// object is a body's top-level object as Apply reads it.
type object struct {
	named         []member // the fields a rule names, in order
	n             int      // how many fields it has
	open, closing int      // the offsets of its '{' and its '}'
	lastVe        int      // where the value of its last field ends
}

// scanObject reads the top-level object of a JSON body, listing the fields whose names are among
// names (escaped names read as decoded) and appending them to ms; anything but one well-formed
// JSON object is an error wrapping errInvalidJSON.
func scanObject(body []byte, names []string, ms []member) (obj object, err error) {
	s := scanner{b: body}
	s.ws()
	if s.peek() != '{' {
		return obj, s.fail("request body must be a JSON object")
	}
	obj.open = s.i
	s.i++
	start := s.i
	s.ws()
	if s.peek() == '}' {
		obj.closing = s.i
		s.i++
	} else {
		prevVe := -1
		for {
			s.ws()
			ks, ke, esc, err := s.key()
			if err != nil {
				return obj, err
			}
			vs := s.i
			if err := s.value(); err != nil {
				return obj, err
			}
			ve := s.i
			s.ws()
			if name, ok := ruleName(body, ks, ke, esc, names); ok {
				ms = append(ms, member{idx: obj.n, start: start, vs: vs, ve: ve, end: s.i, prevVe: prevVe, name: name})
			}
			obj.n++
			prevVe, obj.lastVe = ve, ve
			c := s.peek()
			if c == '}' {
				obj.closing = s.i
				s.i++
				break
			}
			if c != ',' {
				return obj, s.fail("expected ',' or '}' in object")
			}
			s.i++
			start = s.i
		}
	}
	s.ws()
	if s.i != len(s.b) {
		return obj, s.fail("unexpected data after the JSON object")
	}
	obj.named = ms
	return obj, nil
}

// ruleName is the one of names that the key body[ks:ke] (the contents of a string literal, esc if
// it has escapes) is, compared without allocating unless it is escaped.
func ruleName(body []byte, ks, ke int, esc bool, names []string) (string, bool) {
	key := body[ks:ke]
	if esc {
		var u string // stays "" when the literal is malformed: no name is empty
		_ = json.Unmarshal(body[ks-1:ke+1], &u)
		key = []byte(u)
	}
	for _, n := range names {
		if string(key) == n {
			return n, true
		}
	}
	return "", false
}
