package safetext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"box", "box"},
		{"my box", "my box"},
		{"\x1b[2J\x1b[1;31mevil\x1b[0m", "evil"},
		{"a\x1b]0;pwned title\x07b", "ab"},
		{"a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"},
		{"a\x1bcb", "ab"}, // ESC c: reset
		{"tab\there\r\nnext", "tabherenext"},
		{"a\u009b31mb", "ab"},                // C1 CSI
		{"user\u202eexe.txt", "userexe.txt"}, // bidi override
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{"  spaced  ", "spaced"},
		{"unterminated\x1b[31", "unterminated"},
		{"日本のマシン", "日本のマシン"},
	} {
		if got := Clean(c.in, 64); got != c.want {
			t.Errorf("Clean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Clean(strings.Repeat("é", 500), 64); utf8.RuneCountInString(got) != 64 {
		t.Errorf("not bounded: %d runes", utf8.RuneCountInString(got))
	}
}

func TestCheck(t *testing.T) {
	for _, ok := range []string{"llama3:8b", "my-model/Q4_K_M", "日本のモデル", "a b"} {
		if err := Check(ok); err != nil {
			t.Errorf("Check(%q) = %v", ok, err)
		}
	}
	for in, want := range map[string]string{"m\u202egguf.exe": "U+202E", "loaded\n\x1b[2J": "U+000A", "a\u009bb": "U+009B",
		"\u200bzero": "U+200B", "bad\xff": "UTF-8", "del\x7f": "U+007F"} {
		if err := Check(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%q) = %v, want an error naming %s", in, err, want)
		}
	}
}
