package discover

import (
	"net"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/mdns"
)

func TestCleanText(t *testing.T) {
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
		if got := cleanText(c.in, 64); got != c.want {
			t.Errorf("cleanText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := cleanText(strings.Repeat("é", 500), 64); utf8.RuneCountInString(got) != 64 {
		t.Errorf("not bounded: %d runes", utf8.RuneCountInString(got))
	}
}

// TestFromEntryCleansText: an announcement's name and version (another machine's text, printed by
// `llamatray peer discover` and shown in the window) lose escape sequences and are bounded.
func TestFromEntryCleansText(t *testing.T) {
	e := &mdns.ServiceEntry{Name: "x._llamatray._tcp.local.", Port: 8080, AddrV4: net.ParseIP("10.0.0.1"),
		InfoFields: []string{"id=x", "name=\x1b[2J\x1b]0;owned\x07box\x1b[0m" + strings.Repeat("z", 300), "version=v1\x1b[31m\n"}}
	f, err := FromEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	if f.Instance != "box"+strings.Repeat("z", maxNameRunes-3) || f.Version != "v1" {
		t.Fatalf("instance %q version %q", f.Instance, f.Version)
	}
	e.InfoFields = []string{"id=x", "name=\x1b[0m"} // nothing left: the mDNS instance label
	e.Name = "lab\x1b[31mel._llamatray._tcp.local."
	if f, err := FromEntry(e); err != nil || f.Instance != "label" {
		t.Fatalf("%q %v", f.Instance, err)
	}
}
