package front

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"

	"github.com/llamatray/llamatray/router/internal/h1"
)

// head is a request head the front serves itself, parsed from its bytes.
type head struct {
	method     string
	target     string // the request target as sent (origin form)
	url        *url.URL
	host       string
	header     http.Header
	length     int64 // Content-Length; 0 when none was sent
	close      bool  // Connection: close
	headerSize int   // bytes of the head, request line and blank line included
}

// parseHead parses the request head at the start of b, which holds it whole (through the blank
// line). It accepts only a strict subset of HTTP/1.1 that net/http parses the same way: an
// origin-form target of visible ASCII, "HTTP/1.1", header lines of token names and field values
// without control bytes, every line ending in CRLF, exactly one Host of name characters, at most one
// Content-Length of digits, and no Transfer-Encoding, Expect, Upgrade or obsolete line folding.
// ok is false for anything else, which the front hands to net/http unread so that net/http answers
// it (or refuses it) as it always did: a request is never read two ways (request smuggling).
func parseHead(b []byte) (h head, ok bool) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		return h, false
	}
	raw := b[:end+2] // every line with its CRLF
	if !h1.CRLFOnly(raw) {
		return h, false
	}
	s := string(raw) // one string: the method, target, names and values are slices of it
	h.headerSize = end + 4

	line, rest, _ := h1.Cut(s)
	sp := strings.IndexByte(line, ' ')
	if sp <= 0 {
		return h, false
	}
	h.method = line[:sp]
	line = line[sp+1:]
	sp = strings.IndexByte(line, ' ')
	if sp <= 0 || line[sp+1:] != "HTTP/1.1" {
		return h, false
	}
	h.target = line[:sp]
	if !validMethod(h.method) || h.method == http.MethodConnect || h.target[0] != '/' || !h1.VisibleASCII(h.target) {
		return h, false
	}
	if plainPath(h.target) {
		h.url = &url.URL{Path: h.target} // what url.ParseRequestURI makes of it, without the parse
	} else {
		u, err := url.ParseRequestURI(h.target)
		if err != nil {
			return h, false
		}
		h.url = u
	}

	n := strings.Count(rest, "\n")
	values := make([]string, n) // one array behind every header's value slice
	h.header = make(http.Header, n)
	hosts, lengths := 0, 0
	for i := 0; rest != ""; i++ {
		line, rest, _ = h1.Cut(rest)
		key, value, ok := h1.Field(line)
		if !ok {
			return h, false
		}
		switch key {
		case "Host":
			hosts++
			h.host = value
		case "Content-Length":
			lengths++
			if h.length, ok = h1.Length(value); !ok {
				return h, false
			}
		case "Transfer-Encoding", "Expect", "Upgrade", "Trailer":
			return h, false
		case "Connection":
			if h1.ListHas(value, "upgrade") {
				return h, false
			}
			if h1.ListHas(value, "close") {
				h.close = true
			}
		}
		if key == "Host" {
			continue // net/http keeps it in Request.Host only
		}
		h1.Add(h.header, values, i, key, value)
	}
	if hosts != 1 || lengths > 1 || !validHost(h.host) {
		return h, false
	}
	h1.FixPragma(h.header)
	return h, true
}

// plainPath reports a target of unreserved characters and slashes only (no escapes, query or
// fragment): its URL is its Path alone.
func plainPath(t string) bool {
	for i := 0; i < len(t); i++ {
		if c := t[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// validMethod is a method of upper-case letters (the ones clients send): anything else is
// net/http's to judge.
func validMethod(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return s != ""
}

// validHost is a Host of name and address characters, with an optional port: a name, an IPv4
// address or a bracketed IPv6 one. Anything odder is net/http's to judge.
func validHost(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_' ||
			'0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return s != ""
}
