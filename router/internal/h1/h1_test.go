package h1

import (
	"net/http"
	"testing"
)

func TestLexing(t *testing.T) {
	for _, c := range []struct {
		name string
		got  bool
		want bool
	}{
		{"crlf lines", CRLFOnly([]byte("a\r\nb\r\n")), true},
		{"bare lf", CRLFOnly([]byte("a\nb\r\n")), false},
		{"bare cr", CRLFOnly([]byte("a\rb\r\n")), false},
		{"cr at the end", CRLFOnly([]byte("a\r")), false},
		{"token name", ValidName("X-Request-Id"), true},
		{"name with a space", ValidName("X Request"), false},
		{"empty name", ValidName(""), false},
		{"value with tab", ValidValue("a\tb c"), true},
		{"value with NUL", ValidValue("a\x00"), false},
		{"value past ASCII", ValidValue("caf\xc3\xa9"), false},
		{"visible", VisibleASCII("/v1/models?x=1"), true},
		{"visible with space", VisibleASCII("/a b"), false},
		{"digits", Digits("0123"), true},
		{"signed", Digits("+1"), false},
		{"no digits", Digits(""), false},
		{"list token", ListHas("keep-alive, Close", "close"), true},
		{"list part of a token", ListHas("closed", "close"), false},
		{"header token", HeaderHas([]string{"a", " b ,Upgrade"}, "upgrade"), true},
		{"header without", HeaderHas(nil, "close"), false},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if line, rest, ok := Cut("HTTP/1.1 200 OK\r\nA: b\r\n"); line != "HTTP/1.1 200 OK" || rest != "A: b\r\n" || !ok {
		t.Errorf("Cut = %q %q %v", line, rest, ok)
	}
}

func TestField(t *testing.T) {
	for _, c := range []struct {
		line, key, value string
		ok               bool
	}{
		{"content-length:  12 ", "Content-Length", "12", true},
		{"X-Empty:", "X-Empty", "", true},
		{" Folded: x", "", "", false},
		{": no name", "", "", false},
		{"Bad Name: x", "", "", false},
		{"X-Ctl: a\x01b", "", "", false},
		{"no colon", "", "", false},
	} {
		if key, value, ok := Field(c.line); key != c.key || value != c.value || ok != c.ok {
			t.Errorf("Field(%q) = %q %q %v, want %q %q %v", c.line, key, value, ok, c.key, c.value, c.ok)
		}
	}
}

func TestLengthAddFixPragma(t *testing.T) {
	for v, want := range map[string]bool{"0": true, "007": true, "123456789012345678": true, "1234567890123456789": false, "": false, "+1": false, "1 ": false} {
		if _, ok := Length(v); ok != want {
			t.Errorf("Length(%q) ok = %v, want %v", v, ok, want)
		}
	}
	h, values := http.Header{}, make([]string, 3)
	Add(h, values, 0, "A", "1")
	Add(h, values, 1, "B", "2")
	Add(h, values, 2, "A", "3")
	if got := h["A"]; len(got) != 2 || got[0] != "1" || got[1] != "3" || h["B"][0] != "2" || values[1] != "2" {
		t.Fatalf("header %v, values %v", h, values)
	}
	p := http.Header{"Pragma": {"no-cache"}}
	FixPragma(p)
	if p.Get("Cache-Control") != "no-cache" {
		t.Fatalf("no Cache-Control added: %v", p)
	}
	p = http.Header{"Pragma": {"no-cache"}, "Cache-Control": {"max-age=1"}}
	FixPragma(p)
	if p.Get("Cache-Control") != "max-age=1" {
		t.Fatalf("Cache-Control replaced: %v", p)
	}
}

func TestHasLineBreak(t *testing.T) {
	for s, want := range map[string]bool{"": false, "plain value": false, "a\rb": true, "a\nb": true, "\r\n": true, "tab\there": false} {
		if got := HasLineBreak(s); got != want {
			t.Errorf("HasLineBreak(%q) = %v", s, got)
		}
	}
}
