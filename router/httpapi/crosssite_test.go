package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/locate"
	"github.com/llamatray/llamatray/router/releases"
)

// crossSite are the headers of requests a page of another site makes a browser send: an <img> or a
// no-cors fetch (Sec-Fetch-Site only), a CORS fetch, a browser without Sec-Fetch-*, an opaque origin.
var crossSiteHeaders = map[string]map[string]string{
	"img":                  {"Sec-Fetch-Site": "cross-site"},
	"foreign origin":       {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
	"foreign origin alone": {"Origin": "https://evil.example"},
	"null origin":          {"Origin": "null", "Sec-Fetch-Site": "cross-site"},
}

// notCrossSiteHeaders behave as they always did: the router's own pages, curl and SDKs, and an
// origin the CORS policy allows (a local web UI on another port is cross-site to the browser).
var notCrossSiteHeaders = map[string]map[string]string{
	"no headers":     {},
	"same-origin":    {"Sec-Fetch-Site": "same-origin"},
	"same-site":      {"Sec-Fetch-Site": "same-site"},
	"none":           {"Sec-Fetch-Site": "none"},
	"allowed origin": {"Origin": "http://localhost:5173", "Sec-Fetch-Site": "cross-site"},
}

// send makes one request with headers h and returns the answer with its body read.
func send(t *testing.T, method, url string, h map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// errorCode is the code and message of an error document.
func errorCode(t *testing.T, b []byte) (string, string) {
	t.Helper()
	var doc struct {
		Error struct{ Message, Code string }
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("error body %q: %v", b, err)
	}
	return doc.Error.Code, doc.Error.Message
}

// A cross-site GET or HEAD of a model-routed path is answered only by a model already running
// (loaded or sleeping), as with ?autoload=false: it never starts a load that could evict the user's
// models. Without those headers, or from an allowed origin, it loads as before.
func TestCrossSiteReadsDoNotLoad(t *testing.T) {
	up, got := recordingUpstream(t)
	srv, fe, _ := testRouter(t, up.URL, nil)
	var acquired atomic.Int32
	fe.mu.Lock()
	fe.acquire = func(ctx context.Context, id string) (*engine.Lease, error) {
		acquired.Add(1)
		return fe.lease(id, 0), nil
	}
	fe.mu.Unlock()
	setState := func(s engine.State) {
		fe.mu.Lock()
		fe.models["m1"].State = s
		fe.mu.Unlock()
	}
	paths := []string{"/slots?model=m1", "/props?model=m1", "/metrics?model=m1", "/lora-adapters?model=m1", "/upstream/m1/", "/upstream/m1/props"}

	for _, state := range []engine.State{engine.StateUnloaded, engine.StateFailed, engine.StateLoading, engine.StateStopping} {
		setState(state)
		for name, h := range crossSiteHeaders {
			for _, p := range paths {
				methods := []string{http.MethodGet}
				if strings.HasPrefix(p, "/upstream/") {
					methods = append(methods, http.MethodHead) // the other routes answer GET and POST
				}
				for _, method := range methods {
					resp, b := send(t, method, srv.URL+p, h)
					if resp.StatusCode != http.StatusBadRequest {
						t.Fatalf("%s, %s %s %s: %d %s", state, name, method, p, resp.StatusCode, b)
					}
					if method == http.MethodGet {
						if code, msg := errorCode(t, b); code != "model_not_loaded" || msg != errModelNotLoaded.Error() {
							t.Fatalf("%s, %s %s: %s %q", state, name, p, code, msg)
						}
					}
				}
			}
		}
	}
	if n := acquired.Load(); n != 0 {
		t.Fatalf("cross-site reads of a stopped model took %d leases", n)
	}
	select {
	case s := <-got:
		t.Fatalf("a cross-site read of a stopped model reached a child: %+v", s)
	default:
	}

	served := 0
	for _, state := range []engine.State{engine.StateLoaded, engine.StateSleeping} {
		setState(state)
		for name, h := range crossSiteHeaders {
			for _, p := range paths {
				resp, b := send(t, http.MethodGet, srv.URL+p, h)
				if resp.StatusCode != 200 || !strings.Contains(string(b), `"upstream":true`) {
					t.Fatalf("%s, %s %s: %d %s", state, name, p, resp.StatusCode, b)
				}
				if resp.Header.Get("Access-Control-Allow-Origin") != "" {
					t.Fatalf("%s %s: readable cross-site", name, p)
				}
				<-got
				served++
			}
		}
	}

	setState(engine.StateUnloaded)
	for name, h := range notCrossSiteHeaders {
		for _, p := range paths {
			if resp, b := send(t, http.MethodGet, srv.URL+p, h); resp.StatusCode != 200 {
				t.Fatalf("%s %s: %d %s", name, p, resp.StatusCode, b)
			}
			<-got
			served++
		}
	}
	if n := acquired.Load(); int(n) != served {
		t.Fatalf("%d leases for %d requests served", n, served)
	}
	waitReleased(t, fe, served)

	// A cross-site write is refused even without an Origin (no browser sends that, but it is
	// cross-site all the same).
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/models/load", strings.NewReader(`{"model":"m1"}`))
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, code, _ := decodeError(t, resp)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || code != "origin_not_allowed" || len(fe.calls) != 0 {
		t.Fatalf("cross-site load: %d %s, engine calls %v", resp.StatusCode, code, fe.calls)
	}
}

// A cross-site GET makes no call to the Hugging Face Hub or GitHub (403, saying why) and no rescan
// of the model folders; the local llama-server listing is still answered. The same GETs without
// the headers do call out, to the stand-ins here.
func TestCrossSiteMakesNoOutboundCalls(t *testing.T) {
	var hubCalls, ghCalls, reloads atomic.Int32
	standIn := func(n *atomic.Int32) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			http.Error(w, "stand-in", http.StatusInternalServerError)
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
	mgr := hub.NewManager(&hub.Client{Endpoint: standIn(&hubCalls)}, hub.Cache{Dir: t.TempDir()}, func(string, []string) error { return nil }, nil)
	in := &releases.Installer{
		Client: &releases.Client{Base: standIn(&ghCalls)},
		Store:  releases.Store{Root: t.TempDir()},
		System: func(context.Context) releases.System { return releases.System{OS: runtime.GOOS, Arch: runtime.GOARCH} },
		Verify: locate.Version,
	}
	srv, _, _ := testRouter(t, "", func(o *Options) {
		o.Hub = &HubOptions{Manager: mgr}
		o.LlamaServers = installerBuilds{in}
		o.Reload = func(context.Context) error { reloads.Add(1); return nil }
	})
	outbound := []struct {
		path  string
		calls *atomic.Int32
	}{
		{"/api/hub/search?q=tiny", &hubCalls},
		{"/api/hub/files?repo=Org/Tiny-GGUF", &hubCalls},
		{"/api/llama-server?available=1", &ghCalls},
		{"/api/llama-server?build=latest", &ghCalls},
	}

	for name, h := range crossSiteHeaders {
		for _, c := range outbound {
			resp, b := send(t, http.MethodGet, srv.URL+c.path, h)
			code, msg := errorCode(t, b)
			if resp.StatusCode != http.StatusForbidden || code != "origin_not_allowed" || !strings.Contains(msg, "Hugging Face Hub or GitHub") {
				t.Fatalf("%s %s: %d %s %q", name, c.path, resp.StatusCode, code, msg)
			}
		}
		resp, b := send(t, http.MethodGet, srv.URL+"/api/llama-server", h)
		var list releases.Listing
		if err := json.Unmarshal(b, &list); resp.StatusCode != 200 || err != nil || list.Available != nil || list.AvailableError != "" {
			t.Fatalf("%s local listing: %d %s", name, resp.StatusCode, b)
		}
		if resp, b := send(t, http.MethodGet, srv.URL+"/models?reload=1", h); resp.StatusCode != 200 {
			t.Fatalf("%s reload: %d %s", name, resp.StatusCode, b)
		}
	}
	if hubCalls.Load() != 0 || ghCalls.Load() != 0 || reloads.Load() != 0 {
		t.Fatalf("cross-site GETs made %d Hub calls, %d GitHub calls, %d rescans", hubCalls.Load(), ghCalls.Load(), reloads.Load())
	}

	for name, h := range notCrossSiteHeaders {
		for _, c := range outbound {
			before := c.calls.Load()
			if resp, b := send(t, http.MethodGet, srv.URL+c.path, h); resp.StatusCode == http.StatusForbidden {
				t.Fatalf("%s %s: %d %s", name, c.path, resp.StatusCode, b)
			}
			if c.calls.Load() == before {
				t.Fatalf("%s %s: no call to the stand-in", name, c.path)
			}
		}
		before := reloads.Load()
		send(t, http.MethodGet, srv.URL+"/models?reload=1", h)
		if reloads.Load() != before+1 {
			t.Fatalf("%s: ?reload=1 did not rescan", name)
		}
	}
}
