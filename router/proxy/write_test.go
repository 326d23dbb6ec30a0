package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestWriteRequestAsNetHTTP: writeRequest puts on the wire the same head lines (in another order of
// names) and body as Request.Write, for the requests forward makes and for ones it hands to it.
func TestWriteRequestAsNetHTTP(t *testing.T) {
	mk := func(method, target string, body string, tweak func(*http.Request)) func() *http.Request {
		return func() *http.Request {
			u, _ := url.Parse(target)
			r := &http.Request{Method: method, URL: u, Header: http.Header{}, Host: ""}
			if body != "" {
				r.Body, r.ContentLength = io.NopCloser(strings.NewReader(body)), int64(len(body))
			}
			r.Header["Content-Type"] = []string{"application/json"}
			r.Header["X-Multi"] = []string{"a", " b "}
			r.Header["User-Agent"] = []string{""}
			if tweak != nil {
				tweak(r)
			}
			return r
		}
	}
	cases := map[string]func() *http.Request{
		"post":          mk("POST", "http://127.0.0.1:8080/v1/chat/completions", `{"model":"m"}`, nil),
		"post empty":    mk("POST", "http://127.0.0.1:8080/tokenize", "", nil),
		"get":           mk("GET", "http://127.0.0.1:8080/slots?model=m&x=%20y", "", nil),
		"delete":        mk("DELETE", "http://127.0.0.1:8080/upstream/x", "", nil),
		"head":          mk("HEAD", "http://127.0.0.1:8080/health", "", nil),
		"escaped path":  mk("GET", "http://localhost/a%2Fb/c", "", nil),
		"close":         mk("POST", "http://127.0.0.1:1/completion", "{}", func(r *http.Request) { r.Close = true }),
		"close already": mk("POST", "http://127.0.0.1:1/completion", "{}", func(r *http.Request) { r.Close = true; r.Header["Connection"] = []string{"close"} }),
		"agent":         mk("POST", "http://127.0.0.1:1/completion", "{}", func(r *http.Request) { r.Header["User-Agent"] = []string{" sdk/2 "} }),
		"no agent":      mk("POST", "http://127.0.0.1:1/completion", "{}", func(r *http.Request) { delete(r.Header, "User-Agent") }),
		"host field":    mk("GET", "http://127.0.0.1:1/props", "", func(r *http.Request) { r.Host = "llamatray" }),
		"chunked":       mk("POST", "http://127.0.0.1:1/completion", "{}", func(r *http.Request) { r.ContentLength = -1 }),
		"line break":    mk("POST", "http://127.0.0.1:1/completion", "{}", func(r *http.Request) { r.Header["X-Bad"] = []string{"a\r\nX-Injected: 1"} }),
		"unicode host":  mk("GET", "http://bücher.example/x", "", nil),
		"put empty":     mk("PUT", "http://127.0.0.1:1/x", "", nil),
		"patch":         mk("PATCH", "http://127.0.0.1:1/x", "{}", nil),
		"options":       mk("OPTIONS", "http://127.0.0.1:1/x", "", nil),
		"ipv6 zone":     mk("GET", "http://[fe80::1%25eth0]:8080/x", "", nil),
		"ipv6":          mk("GET", "http://[::1]:8080/x?a=b", "", nil),
		"trailer":       mk("POST", "http://127.0.0.1:1/completion", "{}", func(r *http.Request) { r.Trailer = http.Header{"X-T": nil} }),
	}
	for name, newReq := range cases {
		var want, got bytes.Buffer
		werr := newReq().Write(&want)
		bw := bufio.NewWriter(&got)
		gerr := writeRequest(bw, newReq())
		_ = bw.Flush()
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%s: Request.Write %v, writeRequest %v", name, werr, gerr)
			continue
		}
		wh, wb, _ := strings.Cut(want.String(), "\r\n\r\n")
		gh, gb, _ := strings.Cut(got.String(), "\r\n\r\n")
		wl, gl := strings.Split(wh, "\r\n"), strings.Split(gh, "\r\n")
		if wl[0] != gl[0] || wb != gb {
			t.Errorf("%s: request line or body differ:\n%q\n%q", name, want.String(), got.String())
			continue
		}
		slices.Sort(wl[1:])
		slices.Sort(gl[1:])
		if !slices.Equal(wl, gl) {
			t.Errorf("%s: head lines differ:\n%q\n%q", name, wl, gl)
		}
	}
}
