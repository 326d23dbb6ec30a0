// Package h1 holds the lexing rules of the strict subset of HTTP/1.1 heads that Llamatray reads
// itself, rather than through net/http: request heads at the endpoint (router/front) and the heads
// of llama-server's answers (router/httpapi's upstream). Whatever falls outside the subset is left
// to net/http, unread, so that a head is never read two ways.
package h1

import (
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
)

// Cut is the line at the start of s, whose lines each end in CRLF, without its CRLF; and what
// follows it.
func Cut(s string) (line, rest string, found bool) {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return s, "", false
	}
	return s[:i-1], s[i+1:], true
}

// CRLFOnly reports whether every CR of b starts a CRLF and every LF ends one.
func CRLFOnly(b []byte) bool {
	for i, c := range b {
		if c == '\r' && (i+1 == len(b) || b[i+1] != '\n') || c == '\n' && (i == 0 || b[i-1] != '\r') {
			return false
		}
	}
	return true
}

// Field splits a header line (without its CRLF) into its canonical key and its value, trimmed. ok is
// false for a line without a name (a folded line starts with a space), a name that is not a token,
// or a value with control bytes or bytes past ASCII.
func Field(line string) (key, value string, ok bool) {
	colon := strings.IndexByte(line, ':')
	if colon <= 0 {
		return "", "", false
	}
	name, value := line[:colon], textproto.TrimString(line[colon+1:])
	if !ValidName(name) || !ValidValue(value) {
		return "", "", false
	}
	return textproto.CanonicalMIMEHeaderKey(name), value, true
}

// IsTchar reports a token character of RFC 9110 section 5.6.2.
func IsTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// IsHex reports an ASCII hexadecimal digit.
func IsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// HasLineBreak reports a CR or LF in s (two byte searches: faster than strings.ContainsAny).
func HasLineBreak(s string) bool {
	return strings.IndexByte(s, '\n') >= 0 || strings.IndexByte(s, '\r') >= 0
}

// ValidName is a header name: a token.
func ValidName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !IsTchar(s[i]) {
			return false
		}
	}
	return s != ""
}

// ValidValue is a field value of visible ASCII, spaces and tabs: no control bytes, and no bytes
// past ASCII, which servers read differently.
func ValidValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\t' && (c < ' ' || c > '~') {
			return false
		}
	}
	return true
}

// VisibleASCII is a non-empty run of visible ASCII: no spaces or control bytes.
func VisibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return s != ""
}

// Digits is a non-empty run of decimal digits.
func Digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// ListHas reports whether the comma-separated list v holds token, ASCII case ignored.
func ListHas(v, token string) bool {
	for f := range strings.SplitSeq(v, ",") {
		if strings.EqualFold(textproto.TrimString(f), token) {
			return true
		}
	}
	return false
}

// HeaderHas is ListHas over a header's values.
func HeaderHas(values []string, token string) bool {
	for _, v := range values {
		if ListHas(v, token) {
			return true
		}
	}
	return false
}

// Length is a Content-Length value: digits only, at most 18 of them.
func Length(value string) (int64, bool) {
	if len(value) > 18 || !Digits(value) {
		return 0, false
	}
	n, _ := strconv.ParseInt(value, 10, 64)
	return n, true
}

// Add adds the head's i-th field to h. values, one slot per line of the head, is the array behind
// every first value, so that a head's header costs one allocation for its values; a repeated name
// gets an array of its own (the shared one holds one value per name).
func Add(h http.Header, values []string, i int, key, value string) {
	values[i] = value
	if prev, ok := h[key]; ok {
		h[key] = append(prev, value)
	} else {
		h[key] = values[i : i+1 : i+1]
	}
}

// FixPragma adds "Cache-Control: no-cache" to a head whose Pragma is no-cache and that has no
// Cache-Control, as net/http does for HTTP/1.0 caches.
func FixPragma(h http.Header) {
	if p := h["Pragma"]; len(p) > 0 && p[0] == "no-cache" {
		if _, cc := h["Cache-Control"]; !cc {
			h["Cache-Control"] = []string{"no-cache"}
		}
	}
}
