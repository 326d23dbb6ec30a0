package httpapi

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/testbed"
)

// The fake llama-server sends CORS headers as llama-server does: any Origin echoed, an empty
// Allow-Origin without one, and its own preflight answer. None of it may reach the client: the
// router's policy alone decides, on plain answers, the passthrough and streams.
func TestChildCORSHeadersDropped(t *testing.T) {
	fake, _ := startFakeLlama(t, "", "FAKE_LLAMA_TOKENS=3")
	srv, fe, _ := testRouter(t, fake, nil)

	cases := []struct {
		name, method, path, body string
		origin                   string
		wantAllow                string // the only Allow-Origin value expected; "" = no such header at all
		stream                   bool
	}{
		{"props foreign", "GET", "/props?model=m1", "", "https://evil.example", "", false},
		{"slots foreign", "GET", "/slots?model=m1", "", "https://evil.example", "", false},
		{"upstream foreign", "GET", "/upstream/m1/props", "", "https://evil.example", "", false},
		{"upstream health no origin", "GET", "/upstream/m1/health", "", "", "", false},
		{"props no origin", "GET", "/props?model=m1", "", "", "", false},
		{"chat no origin", "POST", "/v1/chat/completions", `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`, "", "", false},
		{"stream no origin", "POST", "/v1/chat/completions", `{"model":"m1","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "", "", true},
		{"upstream stream no origin", "POST", "/upstream/m1/completion", `{"prompt":"x","stream":true}`, "", "", true},
		{"stream local origin", "POST", "/v1/chat/completions", `{"model":"m1","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "http://localhost:5173", "http://localhost:5173", true},
		{"props local origin", "GET", "/upstream/m1/props", "", "http://127.0.0.1:3000", "http://127.0.0.1:3000", false},
		// A preflight without Origin is no browser's: it reaches the child, whose answer loses its CORS headers.
		{"child preflight", "OPTIONS", "/upstream/m1/v1/messages", "", "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.method == "OPTIONS" {
				req.Header.Set("Access-Control-Request-Method", "POST")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if tc.stream {
				if ev := testbed.ReadSSEEvent(t, bufio.NewReader(resp.Body)); !strings.HasPrefix(ev, "data: ") {
					t.Fatalf("first event %q", ev)
				}
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			checkCORSHeaders(t, resp.Header, tc.wantAllow)
		})
	}
	waitReleased(t, fe, len(cases))
}

// checkCORSHeaders fails unless Allow-Origin is exactly want (absent when want is empty), no
// Access-Control-* header is empty or repeated, and without an allowed origin there is none at all.
func checkCORSHeaders(t *testing.T, h http.Header, want string) {
	t.Helper()
	if got, ok := h["Access-Control-Allow-Origin"]; want == "" && ok || want != "" && (len(got) != 1 || got[0] != want) {
		t.Fatalf("Access-Control-Allow-Origin %q, want %q", got, want)
	}
	for k, vs := range h {
		if !strings.HasPrefix(k, "Access-Control-") {
			continue
		}
		if want == "" {
			t.Fatalf("%s: %q without an allowed origin", k, vs)
		}
		if len(vs) != 1 || strings.TrimSpace(vs[0]) == "" {
			t.Fatalf("%s: %q", k, vs)
		}
	}
}
