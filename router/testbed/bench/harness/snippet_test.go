package harness

import (
	"strings"
	"testing"
)

// TestSnippetIsOneLineOfText: an HTML error page becomes its text on one line, and a long body is
// cut on a character boundary.
func TestSnippetIsOneLineOfText(t *testing.T) {
	page := "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
	if got, want := snippet([]byte(page)), "502 Bad Gateway 502 Bad Gateway nginx"; got != want {
		t.Errorf("snippet = %q, want %q", got, want)
	}
	if got := snippet([]byte(`{"error":{"message":"a < b and c > d"}}`)); got != `{"error":{"message":"a < b and c > d"}}` {
		t.Errorf("JSON with < and > changed: %q", got)
	}
	long := snippet([]byte(strings.Repeat("é", 300)))
	if r := []rune(long); len(r) != 201 || r[200] != '…' || strings.ContainsRune(long, '\uFFFD') {
		t.Errorf("long body cut badly: %d runes", len(r))
	}
}
