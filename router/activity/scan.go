package activity

import (
	"bytes"
	"io"
	"time"
)

// Usage is what one answer reported about itself: llama-server's "timings" object (in a JSON
// answer, and in the last events of a stream) and the OpenAI or Anthropic "usage" object.
type Usage struct {
	Timings    Timings
	HasTimings bool
	Tokens     Tokens
	HasUsage   bool
	FirstByte  time.Time // when the first byte of the answer came from the child
}

// Timings is what an answer's "timings" object says (llama-server's own keys).
type Timings struct {
	PromptN     int64
	CacheN      int64
	PromptMs    float64
	PredictedN  int64
	PredictedMs float64
	// Speculative decoding (a draft model): tokens the draft proposed and how many of them the
	// model accepted; llama-server 0.7.0 adds draft_n and draft_n_accepted only with a draft.
	DraftN        int64
	DraftAccepted int64
}

// Tokens is an answer's "usage" object, OpenAI's or Anthropic's keys.
type Tokens struct {
	PromptTokens     int64
	CompletionTokens int64
	InputTokens      int64 // Anthropic
	OutputTokens     int64 // Anthropic
}

// set takes one key of a "timings" object.
func (t *Timings) set(key []byte, v float64) {
	switch string(key) {
	case "prompt_n":
		t.PromptN = int64(v)
	case "cache_n":
		t.CacheN = int64(v)
	case "prompt_ms":
		t.PromptMs = v
	case "predicted_n":
		t.PredictedN = int64(v)
	case "predicted_ms":
		t.PredictedMs = v
	case "draft_n":
		t.DraftN = int64(v)
	case "draft_n_accepted":
		t.DraftAccepted = int64(v)
	}
}

// set takes one key of a "usage" object.
func (t *Tokens) set(key []byte, v float64) {
	switch string(key) {
	case "prompt_tokens":
		t.PromptTokens = int64(v)
	case "completion_tokens":
		t.CompletionTokens = int64(v)
	case "input_tokens":
		t.InputTokens = int64(v)
	case "output_tokens":
		t.OutputTokens = int64(v)
	}
}

// In is the number of prompt tokens: the usage's when given, else the timings' (cached ones included).
func (u *Usage) In() int64 {
	if v := max(u.Tokens.PromptTokens, u.Tokens.InputTokens); u.HasUsage && v > 0 {
		return v
	}
	return u.Timings.PromptN + u.Timings.CacheN
}

// Out is the number of generated tokens: the timings' when given, else the usage's.
func (u *Usage) Out() int64 {
	if u.HasTimings && u.Timings.PredictedN > 0 {
		return u.Timings.PredictedN
	}
	return max(u.Tokens.CompletionTokens, u.Tokens.OutputTokens)
}

// The keys whose objects are read. JSON strings escape their quotes, so these bytes cannot occur
// inside answer text.
var (
	keyTimings = []byte(`"timings":`)
	keyUsage   = []byte(`"usage":`)
)

// maxObject bounds one captured object; a larger one is not read.
const maxObject = 4 << 10

// Scanner passes an answer body through unchanged and reads, as the bytes go by, the "timings" and
// "usage" objects in it. It holds no more than the object being read (a few hundred bytes), never
// the text. The last value of each field wins, so a stream's final timings count. Done is called
// once, when the body is closed.
type Scanner struct {
	body io.ReadCloser
	done func(*Usage)
	now  func() time.Time
	u    Usage

	mt, mu  int    // bytes of keyTimings and keyUsage matched so far
	which   int    // 1 timings, 2 usage: the key just matched, waiting for its '{'
	obj     []byte // the object being captured, when it spans reads (one within a read is read there)
	depth   int    // brace depth inside obj
	inStr   bool   // inside a string of obj
	escaped bool   // the previous byte of a string was a backslash
	skip    bool   // obj grew past maxObject: drop it
	closed  bool
}

// NewScanner wraps body; done gets the usage when the body is closed.
func NewScanner(body io.ReadCloser, done func(*Usage)) *Scanner {
	return &Scanner{body: body, done: done, now: time.Now}
}

func (s *Scanner) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	if n > 0 {
		if s.u.FirstByte.IsZero() {
			s.u.FirstByte = s.now()
		}
		s.scan(p[:n])
	}
	return n, err
}

// Close closes the body and reports the usage.
func (s *Scanner) Close() error {
	err := s.body.Close()
	if !s.closed {
		s.closed = true
		if s.done != nil {
			s.done(&s.u)
		}
	}
	return err
}

func (s *Scanner) scan(b []byte) {
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case s.depth > 0:
			i += s.capture(b[i:], 0) - 1
		case s.which != 0:
			switch c {
			case ' ', '\t', '\r', '\n':
			case '{':
				s.depth, s.obj, s.skip, s.inStr, s.escaped = 1, s.obj[:0], false, false, false
				i += s.capture(b[i:], 1) - 1
			default:
				s.which = 0
			}
		default:
			if s.mt == 0 && s.mu == 0 {
				// Fast path: skip to the next quote.
				if c != '"' {
					j := bytes.IndexByte(b[i:], '"')
					if j < 0 {
						return
					}
					i += j
					c = b[i]
				}
				if rest := b[i:]; len(rest) >= len(keyTimings) {
					// The whole key, if it is one, is in b: compare at once.
					switch {
					case bytes.HasPrefix(rest, keyTimings):
						s.which, i = 1, i+len(keyTimings)-1
					case bytes.HasPrefix(rest, keyUsage):
						s.which, i = 2, i+len(keyUsage)-1
					}
					continue
				}
			}
			s.mt = step(keyTimings, s.mt, c)
			s.mu = step(keyUsage, s.mu, c)
			if s.mt == len(keyTimings) {
				s.which, s.mt, s.mu = 1, 0, 0
			} else if s.mu == len(keyUsage) {
				s.which, s.mt, s.mu = 2, 0, 0
			}
		}
	}
}

// step advances a match of key by c. Both keys start with the only quote they hold, so a
// mismatch restarts at 1 on a quote, else at 0.
func step(key []byte, m int, c byte) int {
	if key[m] == c {
		return m + 1
	}
	if c == '"' {
		return 1
	}
	return 0
}

// capture reads b, the next bytes of the object being captured, up to the object's end: it
// returns how many bytes of b belong to the object, and reads the object once it is whole. The
// first from bytes of b are the object's already looked at (its opening brace).
func (s *Scanner) capture(b []byte, from int) int {
	n, whole := len(b), false
loop:
	for i := from; i < len(b); i++ {
		c := b[i]
		switch {
		case s.inStr:
			switch {
			case s.escaped:
				s.escaped = false
			case c == '\\':
				s.escaped = true
			case c == '"':
				s.inStr = false
			}
		case c == '"':
			s.inStr = true
		case c == '{':
			s.depth++
		case c == '}':
			if s.depth--; s.depth == 0 {
				n, whole = i+1, true
				break loop
			}
		}
	}
	obj := b[:n] // the whole object, when it began in b and ended there: read in place
	if !s.skip && (!whole || len(s.obj) > 0) {
		if len(s.obj)+n > maxObject {
			s.skip, s.obj = true, s.obj[:0]
		} else {
			s.obj = append(s.obj, b[:n]...)
			obj = s.obj
		}
	}
	if !whole {
		return n
	}
	if !s.skip {
		switch s.which {
		case 1:
			t := s.u.Timings // a later object updates the keys it has, as the stream goes on
			if numbers(obj, t.set) {
				s.u.Timings, s.u.HasTimings = t, true
			}
		case 2:
			t := s.u.Tokens
			if numbers(obj, t.set) {
				s.u.Tokens, s.u.HasUsage = t, true
			}
		}
	}
	s.which, s.obj = 0, s.obj[:0]
	return n
}
