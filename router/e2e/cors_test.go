package e2e

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/engine"
)

// llama-server echoes any Origin in Access-Control-Allow-Origin and sends an empty one without an
// Origin. Through Llamatray no answer — proxied GETs, the passthrough, streams — names a foreign
// origin or carries an empty CORS header; an allowed origin gets exactly one Allow-Origin.
func TestChildCORSNeverLeaks(t *testing.T) {
	in := start(t, []string{"alpha"}, nil)
	const evil = "https://evil.example"
	// A page of another site reads only from a model already running: it never loads one.
	req, _ := http.NewRequest("GET", in.base+"/props?model=alpha", nil)
	req.Header.Set("Origin", evil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || in.state("alpha").State != engine.StateUnloaded {
		t.Fatalf("a cross-site GET of a stopped model: %d, alpha %s", resp.StatusCode, in.state("alpha").State)
	}
	if err := in.svc.Engine().Load(t.Context(), "alpha"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method, path string
		body         []byte
		origin, want string
	}{
		{"GET", "/props?model=alpha", nil, evil, ""},
		{"GET", "/slots?model=alpha", nil, evil, ""},
		{"GET", "/upstream/alpha/props", nil, evil, ""},
		{"GET", "/upstream/alpha/health", nil, "", ""},
		{"GET", "/props?model=alpha", nil, "", ""},
		{"POST", "/v1/chat/completions", chatBody("alpha", true, 4), "", ""},
		{"POST", "/v1/chat/completions", chatBody("alpha", false, 4), "http://localhost:5173", "http://localhost:5173"},
		{"POST", "/upstream/alpha/v1/chat/completions", chatBody("alpha", true, 4), "http://127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"OPTIONS", "/upstream/alpha/v1/messages", nil, "", ""},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, in.base+c.path, bytes.NewReader(c.body))
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, resp.StatusCode, b)
		}
		got, ok := resp.Header["Access-Control-Allow-Origin"]
		if c.want == "" && ok || c.want != "" && (len(got) != 1 || got[0] != c.want) {
			t.Fatalf("%s %s (Origin %q): Access-Control-Allow-Origin %q, want %q", c.method, c.path, c.origin, got, c.want)
		}
		for k, vs := range resp.Header {
			if strings.HasPrefix(k, "Access-Control-") && (c.want == "" || len(vs) != 1 || strings.TrimSpace(vs[0]) == "") {
				t.Fatalf("%s %s (Origin %q): %s %q", c.method, c.path, c.origin, k, vs)
			}
		}
	}
}
