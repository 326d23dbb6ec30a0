package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/view"
)

// TestProxyRouteFamilies sends every model-routed endpoint through the router, naming the model by
// alias, and checks that method, path, query and body reach the child unchanged, that the router's
// credentials do not, that the request ID is passed and echoed, and that the lease is given back.
func TestProxyRouteFamilies(t *testing.T) {
	up, got := recordingUpstream(t)
	srv, fe, _ := testRouter(t, up.URL, nil)

	type req struct{ method, path, body string }
	var reqs []req
	for _, p := range proxiedPOST {
		reqs = append(reqs, req{http.MethodPost, p, `{"model":"fast","prompt":"hi","n":[1,2,{"x":"y"}]}`})
	}
	reqs = append(reqs,
		req{http.MethodGet, "/slots?model=fast", ""},
		req{http.MethodGet, "/metrics?model=fast", ""},
		req{http.MethodGet, "/props?model=fast", ""},
		req{http.MethodPost, "/props", `{"model":"fast","n_ctx":0}`},
		req{http.MethodPost, "/slots/0?action=save&model=fast", `{"filename":"s.bin"}`},
		req{http.MethodGet, "/upstream/fast/", ""},
		req{http.MethodGet, "/upstream/m1/assets/app.js?v=1", ""},
		req{http.MethodPost, "/upstream/fast/v1/chat/completions", `{"model":"anything"}`},
		req{http.MethodDelete, "/upstream/m1/x%2Fy/z", ""},
	)
	for _, rq := range reqs {
		t.Run(rq.method+" "+rq.path, func(t *testing.T) {
			hr, _ := http.NewRequest(rq.method, srv.URL+rq.path, strings.NewReader(rq.body))
			hr.Header.Set("Authorization", "Bearer sk-client")
			hr.Header.Set("X-Api-Key", "sk-client")
			hr.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			s := <-got
			wantPath, wantQuery, _ := strings.Cut(rq.path, "?")
			if strings.HasPrefix(wantPath, "/upstream/") {
				rest := strings.SplitN(wantPath, "/", 4)
				wantPath = "/"
				if len(rest) == 4 {
					wantPath += rest[3]
				}
			}
			gotPath := s.Path
			if s.RawPath != "" {
				gotPath = s.RawPath
			}
			if s.Method != rq.method || gotPath != wantPath || s.Query != wantQuery || string(s.Body) != rq.body {
				t.Fatalf("upstream got %s %s ? %s body %q; want %s %s ? %s body %q", s.Method, gotPath, s.Query, s.Body, rq.method, wantPath, wantQuery, rq.body)
			}
			if s.Header.Get("Authorization") != "" || s.Header.Get("X-Api-Key") != "" {
				t.Fatalf("credentials forwarded: %v", s.Header)
			}
			if s.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("Content-Type not forwarded: %v", s.Header)
			}
			id := resp.Header.Get(requestIDHeader)
			if id == "" || s.Header.Get(requestIDHeader) != id || len(resp.Header.Values(requestIDHeader)) != 1 {
				t.Fatalf("request id: response %v, upstream %q", resp.Header.Values(requestIDHeader), s.Header.Get(requestIDHeader))
			}
			if !bytes.Contains(body, []byte(`"upstream":true`)) {
				t.Fatalf("body %s", body)
			}
			waitReleased(t, fe, 1)
			if n := fe.active("m1"); n != 0 {
				t.Fatalf("%d leases still held", n)
			}
		})
	}
}

func TestProxyClientRequestID(t *testing.T) {
	up, got := recordingUpstream(t)
	srv, _, _ := testRouter(t, up.URL, nil)
	hr, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/embeddings", strings.NewReader(`{"model":"m1","input":"x"}`))
	hr.Header.Set(requestIDHeader, "client-id-42")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s := <-got; s.Header.Get(requestIDHeader) != "client-id-42" || resp.Header.Get(requestIDHeader) != "client-id-42" {
		t.Fatalf("upstream %q, response %q", s.Header.Get(requestIDHeader), resp.Header.Get(requestIDHeader))
	}
}

func TestProxyUpstreamRootRedirects(t *testing.T) {
	up, _ := recordingUpstream(t)
	srv, _, _ := testRouter(t, up.URL, nil)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(srv.URL + "/upstream/fast?x=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/upstream/fast/?x=1" {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func post(t testing.TB, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func TestProxyRequestErrors(t *testing.T) {
	up, got := recordingUpstream(t)
	srv, fe, _ := testRouter(t, up.URL, func(o *Options) { o.BodyLimit = 1024 })
	big := `{"model":"m1","prompt":"` + strings.Repeat("x", 2048) + `"}`
	cases := []struct {
		name, path, body string
		status           int
		typ, code        string
	}{
		{"malformed", "/v1/chat/completions", `{"model":"m1",`, 400, "invalid_request_error", "invalid_json"},
		{"not an object", "/v1/completions", `[1,2]`, 400, "invalid_request_error", "invalid_json"},
		{"model not a string", "/completion", `{"model":7}`, 400, "invalid_request_error", "invalid_json"},
		{"no model, no default", "/v1/chat/completions", `{"messages":[]}`, 400, "invalid_request_error", "model_required"},
		{"empty body, no default", "/tokenize", ``, 400, "invalid_request_error", "model_required"},
		{"unknown model", "/v1/chat/completions", `{"model":"m2"}`, 404, "invalid_request_error", "model_not_found"},
		{"absolute path", "/v1/chat/completions", `{"model":"/models/m1.gguf"}`, 404, "invalid_request_error", "model_not_found"},
		{"relative path", "/v1/chat/completions", `{"model":"../m1"}`, 404, "invalid_request_error", "model_not_found"},
		{"windows path", "/v1/chat/completions", `{"model":"C:\\models\\m1.gguf"}`, 404, "invalid_request_error", "model_not_found"},
		{"too large", "/v1/chat/completions", big, 413, "invalid_request_error", "body_too_large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := post(t, srv.URL+tc.path, tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			resp.Body = io.NopCloser(bytes.NewReader(b))
			typ, code, msg := decodeError(t, resp)
			if typ != tc.typ || code != tc.code || msg == "" {
				t.Fatalf("error %q %q %q", typ, code, msg)
			}
		})
	}
	// Without Content-Length (chunked) the limit holds too.
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte(big))
		_ = pw.Close()
	}()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", pr)
	if err != nil {
		t.Fatal(err)
	}
	if _, code, msg := decodeError(t, resp); resp.StatusCode != 413 || code != "body_too_large" || !strings.Contains(msg, "1024 bytes") {
		t.Fatalf("chunked: %d %q %q", resp.StatusCode, code, msg)
	}
	resp.Body.Close()
	select {
	case s := <-got:
		t.Fatalf("a refused request reached the child: %+v", s)
	default:
	}
	if fe.active("m1") != 0 {
		t.Fatal("lease leaked")
	}
	fe.mu.Lock()
	defer fe.mu.Unlock()
	for _, name := range fe.resolved {
		if view.PathLike(name) {
			t.Fatalf("path %q reached Resolve", name)
		}
	}
}

func TestProxyDefaultModel(t *testing.T) {
	up, got := recordingUpstream(t)
	srv, _, _ := testRouter(t, up.URL, func(o *Options) { o.DefaultModel = "fast" })
	for _, body := range []string{`{"messages":[]}`, ``, `{"model":null}`} {
		resp, b := post(t, srv.URL+"/v1/chat/completions", body)
		if resp.StatusCode != 200 {
			t.Fatalf("%q: %d %s", body, resp.StatusCode, b)
		}
		if s := <-got; string(s.Body) != body {
			t.Fatalf("body changed: %q", s.Body)
		}
	}
	resp, err := http.Get(srv.URL + "/slots")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /slots with default model: %d", resp.StatusCode)
	}
	<-got
}

func TestProxyUnreachableChild(t *testing.T) {
	// A port that was just closed: nothing listens there.
	up, _ := recordingUpstream(t)
	dead := up.URL
	up.Close()
	srv, fe, _ := testRouter(t, dead, nil)
	resp, b := post(t, srv.URL+"/v1/chat/completions", `{"model":"m1"}`)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var doc struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.Error.Code != "upstream_error" || !strings.Contains(doc.Error.Message, "m1") {
		t.Fatalf("%s %v", b, err)
	}
	waitReleased(t, fe, 1)
}

func TestRouterPropsWithoutModel(t *testing.T) {
	srv, _, _ := testRouter(t, "", nil)
	resp, err := http.Get(srv.URL + "/props")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || doc["role"] != "router" || doc["max_instances"] != float64(2) {
		t.Fatalf("%v %v", doc, err)
	}
}

func TestNotFoundAndMethod(t *testing.T) {
	srv, _, _ := testRouter(t, "", nil)
	for path, want := range map[string]int{"/nope": 404, "/v1/chat/completions": 405} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		typ, _, _ := decodeError(t, resp)
		resp.Body.Close()
		if resp.StatusCode != want || typ != "invalid_request_error" {
			t.Fatal(path, resp.StatusCode, typ)
		}
	}
}

// TestUpstreamNamesOnlyCatalogIDs: the passthrough takes catalog IDs and aliases, never paths.
func TestUpstreamNamesOnlyCatalogIDs(t *testing.T) {
	up, got := recordingUpstream(t)
	srv, fe, _ := testRouter(t, up.URL, nil)
	fe.add("orphan", up.URL) // known to the engine but not in the catalog
	for _, p := range []string{"/upstream/%2Fetc%2Fpasswd/", "/upstream/..%2F..%2Fm1/x", "/upstream/C:%5Cmodels%5Cm1.gguf/",
		"/upstream/~%2Fm1.gguf/", "/upstream/nope/", "/upstream/orphan/"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		_, code, _ := decodeError(t, resp)
		resp.Body.Close()
		if resp.StatusCode != 404 || code != "model_not_found" {
			t.Errorf("%s: %d %s", p, resp.StatusCode, code)
		}
	}
	select {
	case s := <-got:
		t.Fatalf("reached the child: %+v", s)
	default:
	}
}
