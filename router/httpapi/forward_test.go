package httpapi

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestForwardHeaders: what the child gets and what the client gets back, header by header.
func TestForwardHeaders(t *testing.T) {
	got := make(chan *http.Request, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got <- r
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Connection", "X-Hop")
		h.Set("X-Hop", "1")
		h.Set("Keep-Alive", "timeout=5")
		h.Set("X-Child", "kept")
		h.Set("Trailer", "X-Sum")
		_, _ = io.WriteString(w, `{"ok":true}`)
		h.Set("X-Sum", "42")
	}))
	defer up.Close()
	srv, _, _ := testRouter(t, up.URL, nil)

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions?a=1;b=2&c=%zz&d=4", strings.NewReader(`{"model":"m1"}`))
	req.Header.Set("Connection", "X-Private, keep-alive")
	req.Header.Set("X-Private", "hop")
	req.Header.Set("Proxy-Authorization", "Basic eA==")
	req.Header.Set("Te", "trailers, deflate")
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("Forwarded", "for=203.0.113.9")
	req.Header.Set("X-Forwarded-Host", "evil.example")
	req.Header.Set("X-Custom", "passed")
	req.Header.Add("X-Multi", "one")
	req.Header.Add("X-Multi", "two")
	req.Header.Set("User-Agent", "sdk/1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := <-got

	for _, k := range []string{"X-Private", "Proxy-Authorization", "X-Forwarded-For", "Forwarded", "X-Forwarded-Host"} {
		if v := r.Header.Get(k); v != "" {
			t.Errorf("the child got %s: %q", k, v)
		}
	}
	if r.Header.Get("Te") != "trailers" || r.Header.Get("X-Custom") != "passed" || r.UserAgent() != "sdk/1.0" ||
		strings.Join(r.Header.Values("X-Multi"), ",") != "one,two" {
		t.Errorf("the child's headers: %v", r.Header)
	}
	if q := r.URL.RawQuery; q != "d=4" && q != "a=1&d=4" {
		// url.ParseQuery drops what does not parse: the semicolon's pair and the bad escape.
		t.Errorf("the child's query %q", q)
	}
	if string(body) != `{"ok":true}` || resp.Header.Get("X-Child") != "kept" {
		t.Errorf("answer %q, headers %v", body, resp.Header)
	}
	for _, k := range []string{"X-Hop", "Keep-Alive"} {
		if v := resp.Header.Get(k); v != "" {
			t.Errorf("the client got %s: %q", k, v)
		}
	}
	if resp.Trailer.Get("X-Sum") != "42" {
		t.Errorf("trailer %v", resp.Trailer)
	}
}

// TestForwardAddsNoUserAgent: a request without a User-Agent reaches the child without one, not with Go's.
func TestForwardAddsNoUserAgent(t *testing.T) {
	up, got := recordingUpstream(t)
	srv, _, _ := testRouter(t, up.URL, nil)
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"model":"m1","input":"x"}`
	_, _ = io.WriteString(c, "POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"+body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s := <-got; s.Header.Get("User-Agent") != "" {
		t.Fatalf("the child got User-Agent %q", s.Header.Get("User-Agent"))
	}
}
