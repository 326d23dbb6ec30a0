// Package safetext is the one rule for names and words that come from elsewhere (peers' model
// IDs and states, aliases, mDNS announcements) and are shown on a terminal, in the window or the
// tray, or listed by the API: no control or format characters (C0, DEL, C1, escape sequences,
// bidi overrides such as U+202E) and valid UTF-8. Text that is only shown is cleaned (Clean); a
// name that is also sent back or stored as given is refused when it breaks the rule (Check).
package safetext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// bad says whether r may not be shown: a control or format character.
func bad(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }

// Check says what in s breaks the rule, or nil: invalid UTF-8, or the first control or format
// character, by its code point.
func Check(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%q is not valid UTF-8", s)
	}
	for _, r := range s {
		if bad(r) {
			return fmt.Errorf("%q holds the control or format character U+%04X", s, r)
		}
	}
	return nil
}

// Clean is s as it may be shown on a terminal or in the window: escape sequences (ESC [ ... ,
// ESC ] ... BEL) and every other control or format character (C0, DEL, C1, bidi overrides) left
// out, invalid UTF-8 replaced, spaces trimmed, at most max runes.
func Clean(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	n := 0
	for i := 0; i < len(s) && n < max; {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == 0x1b || r == 0x9b || r == 0x9d { // ESC, CSI, OSC
			i += size + escapeLen(s[i+size:], r)
			continue
		}
		i += size
		if bad(r) {
			continue
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}

// escapeLen is how many bytes of rest, after the introducer intro, belong to its escape sequence:
// a CSI's parameters up to its final byte, an OSC's text up to BEL or ESC \, one byte after ESC.
func escapeLen(rest string, intro rune) int {
	if intro == 0x1b {
		if rest == "" {
			return 0
		}
		switch rest[0] {
		case '[':
			return 1 + escapeLen(rest[1:], 0x9b)
		case ']':
			return 1 + escapeLen(rest[1:], 0x9d)
		}
		return 1
	}
	for j := 0; j < len(rest); j++ {
		c := rest[j]
		switch {
		case intro == 0x9b && c >= 0x40 && c <= 0x7e: // CSI final byte
			return j + 1
		case intro == 0x9b && (c < 0x20 || c > 0x3f): // not a parameter: the sequence is broken
			return j
		case intro == 0x9d && c == 0x07:
			return j + 1
		case intro == 0x9d && c == 0x1b && j+1 < len(rest) && rest[j+1] == '\\':
			return j + 2
		}
	}
	return len(rest)
}
