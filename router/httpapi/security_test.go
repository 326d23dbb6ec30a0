package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRequiresKey(t *testing.T) {
	for listen, want := range map[string]bool{
		"127.0.0.1:8080": false, "localhost:8080": false, "[::1]:8080": false, "127.0.0.2:80": false,
		"LOCALHOST:1": false, "127.0.0.1": false,
		":8080": true, "0.0.0.0:8080": true, "[::]:8080": true, "192.168.1.5:8080": true, "myhost:8080": true,
		"[::ffff:127.0.0.1]:8080": false,
	} {
		if got := RequiresKey(listen); got != want {
			t.Errorf("RequiresKey(%q) = %v", listen, got)
		}
	}
}

func TestHostCheck(t *testing.T) {
	cases := []struct {
		listen  string
		allowed []string
		host    string
		ok      bool
	}{
		{"127.0.0.1:8080", nil, "127.0.0.1:8080", true},
		{"127.0.0.1:8080", nil, "localhost:8080", true},
		{"127.0.0.1:8080", nil, "LocalHost.", true},
		{"127.0.0.1:8080", nil, "127.9.9.9", true},
		{"127.0.0.1:8080", nil, "[::1]:8080", true},
		{"127.0.0.1:8080", nil, "[::1]", true},
		{"127.0.0.1:8080", nil, "evil.example:8080", false},
		{"127.0.0.1:8080", nil, "localhost.evil.example", false},
		{"127.0.0.1:8080", nil, "192.168.1.5:8080", false},
		{"127.0.0.1:8080", nil, "", false},
		{"127.0.0.1:8080", []string{"tray.lan"}, "tray.lan:8080", true},
		{"127.0.0.1:8080", []string{"Tray.LAN:9"}, "tray.lan", true},
		{"127.0.0.1:8080", []string{"*"}, "anything.example", true},
		{"192.168.1.5:8080", nil, "192.168.1.5:8080", true},
		{"192.168.1.5:8080", nil, "192.168.1.6:8080", false},
		{"0.0.0.0:8080", nil, "192.168.1.5:8080", true},
		{"0.0.0.0:8080", nil, "[fe80::1]:8080", true},
		{"0.0.0.0:8080", nil, "rebind.evil.example:8080", false},
		{":8080", nil, "10.0.0.2:8080", true},
	}
	for _, tc := range cases {
		server := New(Options{Engine: newFakeEngine(), Listen: tc.listen, AllowedHosts: tc.allowed})
		if got := server.hostAllowed(tc.host); got != tc.ok {
			t.Errorf("listen %q allowed %v host %q: %v, want %v", tc.listen, tc.allowed, tc.host, got, tc.ok)
		}
	}
	// Over HTTP: a rebinding Host is refused before anything else runs.
	srv, _, _ := testRouter(t, "", nil)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/models", nil)
	req.Host = "attacker.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, code, _ := decodeError(t, resp)
	resp.Body.Close()
	if resp.StatusCode != 403 || code != "host_not_allowed" {
		t.Fatalf("%d %s", resp.StatusCode, code)
	}
}

func TestCORS(t *testing.T) {
	cases := []struct {
		name       string
		configured []string
		method     string
		origin     string
		preflight  bool
		status     int
		allow      string // expected Access-Control-Allow-Origin
	}{
		{"no origin", nil, "GET", "", false, 200, ""},
		{"localhost", nil, "GET", "http://localhost:3000", false, 200, "http://localhost:3000"},
		{"loopback https", nil, "GET", "https://127.0.0.1", false, 200, "https://127.0.0.1"},
		{"ipv6 loopback", nil, "GET", "http://[::1]:5173", false, 200, "http://[::1]:5173"},
		{"foreign get", nil, "GET", "https://evil.example", false, 200, ""},
		{"foreign post", nil, "POST", "https://evil.example", false, 403, ""},
		{"null origin post", nil, "POST", "null", false, 403, ""},
		{"localhost lookalike", nil, "POST", "http://localhost.evil.example", false, 403, ""},
		{"other scheme", nil, "POST", "file://localhost", false, 403, ""},
		{"configured", []string{"https://app.example/"}, "POST", "https://app.example", false, 200, "https://app.example"},
		{"wildcard", []string{"*"}, "GET", "https://any.example", false, 200, "*"},
		{"preflight localhost", nil, "OPTIONS", "http://localhost:3000", true, 204, "http://localhost:3000"},
		{"preflight foreign", nil, "OPTIONS", "https://evil.example", true, 403, ""},
		{"preflight configured", []string{"https://app.example"}, "OPTIONS", "https://app.example", true, 204, "https://app.example"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up, _ := recordingUpstream(t)
			srv, _, _ := testRouter(t, up.URL, func(o *Options) { o.CORSOrigins = tc.configured })
			path := "/health"
			var body *strings.Reader
			if tc.method == "POST" {
				path, body = "/tokenize", strings.NewReader(`{"model":"m1","content":"x"}`)
			} else {
				body = strings.NewReader("")
			}
			req, _ := http.NewRequest(tc.method, srv.URL+path, body)
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.preflight {
				req.Header.Set("Access-Control-Request-Method", "POST")
				req.Header.Set("Access-Control-Request-Headers", "content-type, x-stainless-os")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status || resp.Header.Get("Access-Control-Allow-Origin") != tc.allow {
				t.Fatalf("%d, Allow-Origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
			}
			if tc.preflight && tc.status == 204 {
				h := resp.Header.Get("Access-Control-Allow-Headers")
				for _, want := range []string{"Authorization", "Content-Type", "X-Api-Key", "Anthropic-Version", "x-stainless-os"} {
					if !strings.Contains(h, want) {
						t.Fatalf("Allow-Headers %q lacks %s", h, want)
					}
				}
				if !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
					t.Fatal("no POST in Allow-Methods")
				}
			}
		})
	}
}

func TestAPIKeys(t *testing.T) {
	up, got := recordingUpstream(t)
	srv, _, _ := testRouter(t, up.URL, func(o *Options) { o.APIKeys = []string{"k-one", "k-two"} })
	cases := []struct {
		name, path string
		header     [2]string
		status     int
	}{
		{"bearer", "/tokenize", [2]string{"Authorization", "Bearer k-one"}, 200},
		{"bearer lower", "/tokenize", [2]string{"Authorization", "bearer k-two"}, 200},
		{"x-api-key", "/v1/messages", [2]string{"X-Api-Key", "k-two"}, 200},
		{"wrong", "/tokenize", [2]string{"Authorization", "Bearer k-three"}, 401},
		{"prefix of a key", "/tokenize", [2]string{"Authorization", "Bearer k-on"}, 401},
		{"basic", "/tokenize", [2]string{"Authorization", "Basic k-one"}, 401},
		{"missing", "/tokenize", [2]string{}, 401},
		{"missing on management", "/models/unload", [2]string{}, 401},
		{"health is open", "/health", [2]string{}, 200},
		{"v1 health is open", "/v1/health", [2]string{}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := http.MethodPost
			if isHealth(tc.path) {
				method = http.MethodGet
			}
			req, _ := http.NewRequest(method, srv.URL+tc.path, strings.NewReader(`{"model":"m1"}`))
			if tc.header[0] != "" {
				req.Header.Set(tc.header[0], tc.header[1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.status == 401 {
				typ, _, _ := decodeError(t, resp)
				if typ != "authentication_error" {
					t.Fatalf("type %q", typ)
				}
			}
			resp.Body.Close()
			if tc.status == 200 && !isHealth(tc.path) {
				s := <-got
				if s.Header.Get("Authorization") != "" || s.Header.Get("X-Api-Key") != "" {
					t.Fatal("key forwarded to the child")
				}
			}
		})
	}
	// A preflight carries no credentials and must still be answered.
	req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/v1/chat/completions", nil)
	req.Header.Set("Origin", "http://localhost:3000")
	req.Header.Set("Access-Control-Request-Method", "POST")
	rec := httptest.NewRecorder()
	req.Host = "127.0.0.1"
	New(Options{Engine: newFakeEngine(), APIKeys: []string{"k"}}).ServeHTTP(rec, req)
	if rec.Code != 204 {
		t.Fatalf("preflight with keys: %d", rec.Code)
	}
}
