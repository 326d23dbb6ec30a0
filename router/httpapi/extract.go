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
// anything else: other values are skipped in place, so a body carrying megabytes of inline base64
// images costs one pass with no allocation. An empty or all-whitespace body has no model (""). A
// body that is not one well-formed JSON object, or whose "model" is neither a string nor null, is
// an error wrapping errInvalidJSON. When "model" appears more than once the last one wins, as with
// encoding/json.
func scanBody(body []byte) (bodyFields, error) {
	var f bodyFields
	var modelErr error // a non-string "model", unless a later one replaces it
	s := scanner{b: body}
	s.ws()
	if s.i == len(s.b) {
		return f, nil
	}
	if s.b[s.i] != '{' {
		return f, s.fail("request body must be a JSON object")
	}
	s.i++
	s.ws()
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			s.ws()
			ks, ke, esc, err := s.str()
			if err != nil {
				return f, err
			}
			s.ws()
			if s.peek() != ':' {
				return f, s.fail("expected ':' after object key")
			}
			s.i++
			s.ws()
			key := s.b[ks:ke]
			switch {
			case !esc && string(key) == "model", esc && unquote(s.b[ks-1:ke+1]) == "model":
				isString, err := s.model(&f)
				if err != nil {
					return f, err
				}
				modelErr = nil
				if !isString {
					modelErr = fmt.Errorf("%w: \"model\" must be a string", errInvalidJSON)
				}
			case !esc && string(key) == "stream", esc && unquote(s.b[ks-1:ke+1]) == "stream":
				start := s.i
				if err := s.value(); err != nil {
					return f, err
				}
				f.Stream = string(s.b[start:s.i]) == "true"
			default:
				if err := s.value(); err != nil {
					return f, err
				}
			}
			s.ws()
			c := s.peek()
			s.i++
			if c == '}' {
				break
			}
			if c != ',' {
				s.i--
				return f, s.fail("expected ',' or '}' in object")
			}
		}
	}
	s.ws()
	if s.i != len(s.b) {
		return f, s.fail("unexpected data after the JSON object")
	}
	return f, modelErr
}

// unquote decodes a JSON string literal including its quotes; "" when it is malformed.
func unquote(lit []byte) string {
	var v string
	if json.Unmarshal(lit, &v) != nil {
		return ""
	}
	return v
}

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

// model reads the value of a "model" key into f; isString is false for a value that is neither a
// string nor null (f.Model is then "").
func (s *scanner) model(f *bodyFields) (isString bool, err error) {
	f.Model = ""
	switch s.peek() {
	case '"':
		start := s.i
		vs, ve, esc, err := s.str()
		if err != nil {
			return false, err
		}
		if !esc && utf8.Valid(s.b[vs:ve]) {
			f.Model = string(s.b[vs:ve])
			return true, nil
		}
		// Escapes or invalid UTF-8: decode exactly as encoding/json does.
		if err := json.Unmarshal(s.b[start:s.i], &f.Model); err != nil {
			return false, fmt.Errorf("%w: bad \"model\" string: %w", errInvalidJSON, err)
		}
		return true, nil
	case 'n':
		return true, s.literal("null")
	default:
		return false, s.value()
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
				if err := s.key(); err != nil {
					return err
				}
			}
			continue
		case '"':
			if _, _, _, err := s.str(); err != nil {
				return err
			}
		case 't':
			if err := s.literal("true"); err != nil {
				return err
			}
		case 'f':
			if err := s.literal("false"); err != nil {
				return err
			}
		case 'n':
			if err := s.literal("null"); err != nil {
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
					if err := s.key(); err != nil {
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

// key consumes an object key and its colon, leaving the scanner at the value.
func (s *scanner) key() error {
	if _, _, _, err := s.str(); err != nil {
		return err
	}
	s.ws()
	if s.peek() != ':' {
		return s.fail("expected ':' after object key")
	}
	s.i++
	s.ws()
	return nil
}

func (s *scanner) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return s.fail("invalid literal")
	}
	s.i += len(lit)
	return nil
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
