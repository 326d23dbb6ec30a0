package front

import (
	"bufio"
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

const plainHead = "POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: OpenAI/Python 1.0\r\n" +
	"Content-Type: application/json\r\nContent-Length: 17\r\nX-Dup: a\r\nx-dup: b\r\nConnection: keep-alive\r\n\r\n"

func TestParseHeadPlain(t *testing.T) {
	h, ok := parseHead([]byte(plainHead + `{"model":"tiny"}` + "\n"))
	if !ok {
		t.Fatal("a plain head was refused")
	}
	if h.method != "POST" || h.target != "/v1/chat/completions?x=1" || h.url.Path != "/v1/chat/completions" || h.url.RawQuery != "x=1" ||
		h.host != "127.0.0.1:8080" || h.length != 17 || h.close || h.headerSize != len(plainHead) {
		t.Fatalf("parsed %+v", h)
	}
	want := http.Header{"User-Agent": {"OpenAI/Python 1.0"}, "Content-Type": {"application/json"}, "Content-Length": {"17"},
		"X-Dup": {"a", "b"}, "Connection": {"keep-alive"}}
	if !reflect.DeepEqual(h.header, want) {
		t.Fatalf("header %v, want %v", h.header, want)
	}
	if h, _ := parseHead([]byte("GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: Close\r\n\r\n")); !h.close || h.length != 0 {
		t.Fatalf("Connection: close not seen: %+v", h)
	}
}

// TestParseHeadLeavesTheOddToNetHTTP lists heads the front must not read itself: each is one that
// servers read differently (request smuggling), or that needs what only net/http does.
func TestParseHeadLeavesTheOddToNetHTTP(t *testing.T) {
	base := func(lines ...string) string {
		return "POST /v1/completions HTTP/1.1\r\nHost: localhost\r\n" + strings.Join(lines, "") + "\r\n"
	}
	for name, in := range map[string]string{
		"transfer-encoding":         base("Transfer-Encoding: chunked\r\n"),
		"te and length":             base("Content-Length: 5\r\n", "Transfer-Encoding: chunked\r\n"),
		"two lengths":               base("Content-Length: 5\r\n", "Content-Length: 5\r\n"),
		"length with a sign":        base("Content-Length: +5\r\n"),
		"length with a space":       base("Content-Length: 5 5\r\n"),
		"length in hex":             base("Content-Length: 0x5\r\n"),
		"empty length":              base("Content-Length: \r\n"),
		"huge length":               base("Content-Length: 99999999999999999999\r\n"),
		"expect":                    base("Expect: 100-continue\r\n"),
		"upgrade":                   base("Connection: Upgrade\r\n", "Upgrade: websocket\r\n"),
		"upgrade alone":             base("Upgrade: h2c\r\n"),
		"trailer":                   base("Trailer: X\r\n"),
		"folded line":               base("X-A: 1\r\n", " 2\r\n"),
		"space before colon":        base("Content-Length : 5\r\n"),
		"tab in name":               base("X\tA: 1\r\n"),
		"no colon":                  base("Garbage\r\n"),
		"bare LF line":              "POST / HTTP/1.1\r\nHost: localhost\nContent-Length: 5\r\n\r\n",
		"bare LF before the end":    "POST / HTTP/1.1\r\nHost: a\n\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n",
		"bare CR":                   base("X-A: 1\r2\r\n"),
		"NUL in a value":            base("X-A: 1\x002\r\n"),
		"DEL in a value":            base("X-A: 1\x7f\r\n"),
		"non-ASCII value":           base("X-A: caf\xc3\xa9\r\n"),
		"no host":                   "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
		"two hosts":                 base("Host: evil\r\n"),
		"host with a slash":         "POST / HTTP/1.1\r\nHost: a/b\r\n\r\n",
		"empty host":                "POST / HTTP/1.1\r\nHost: \r\n\r\n",
		"HTTP/1.0":                  "POST / HTTP/1.0\r\nHost: a\r\n\r\n",
		"HTTP/2 preface":            "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"absolute target":           "POST http://a/x HTTP/1.1\r\nHost: a\r\n\r\n",
		"asterisk target":           "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
		"CONNECT":                   "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
		"lower-case method":         "post / HTTP/1.1\r\nHost: a\r\n\r\n",
		"two spaces":                "POST  / HTTP/1.1\r\nHost: a\r\n\r\n",
		"tab in the request line":   "POST\t/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"control byte in target":    "POST /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n",
		"non-ASCII target":          "POST /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
		"incomplete":                "POST / HTTP/1.1\r\nHost: a\r\n",
		"leading CRLF":              "\r\nPOST / HTTP/1.1\r\nHost: a\r\n\r\n",
		"missing version":           "POST /\r\nHost: a\r\n\r\n",
		"bad escape in target path": "POST /%zz HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		if h, ok := parseHead([]byte(in)); ok {
			t.Errorf("%s: read by the front as %+v; it is net/http's", name, h)
		}
	}
}

// FuzzParseHead checks that whatever the front reads itself, net/http reads the same way: the same
// method, target, host, headers, length and keep-alive. A head net/http refuses, the front refuses.
func FuzzParseHead(f *testing.F) {
	f.Add([]byte(plainHead))
	f.Add([]byte("GET /health HTTP/1.1\r\nHost: [::1]:8080\r\nPragma: no-cache\r\n\r\n"))
	f.Add([]byte("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"))
	f.Add([]byte("POST / HTTP/1.1\r\nHost: a\r\nConnection: close, x\r\nx: y\r\n\r\n"))
	for _, target := range []string{"/v1/chat/completions", "//x", "/a/../b", "/~u/.x", "/a%2Fb", "/a?b=c", "/a#f", "/a;b", "/upstream/m/v1/x"} {
		f.Add([]byte("GET " + target + " HTTP/1.1\r\nHost: a\r\n\r\n"))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h, ok := parseHead(in)
		if !ok {
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			t.Fatalf("the front read %q, net/http refuses it: %v", in, err)
		}
		if req.Method != h.method || req.RequestURI != h.target || req.Host != h.host || req.ContentLength != h.length || req.Close != h.close ||
			!reflect.DeepEqual(req.URL, h.url) {
			t.Fatalf("read two ways: front %+v, net/http %s %s host %q length %d close %v", h, req.Method, req.RequestURI, req.Host, req.ContentLength, req.Close)
		}
		delete(req.Header, "Host")
		if len(req.Header) != len(h.header) || (len(h.header) > 0 && !reflect.DeepEqual(req.Header, h.header)) {
			t.Fatalf("headers read two ways: front %v, net/http %v", h.header, req.Header)
		}
		if h.headerSize > len(in) || !bytes.HasSuffix(in[:h.headerSize], []byte("\r\n\r\n")) {
			t.Fatalf("head size %d of %q", h.headerSize, in)
		}
	})
}
