package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/wire"
)

// peer discover prints what the running instance found, as a table or as JSON, and adds nothing.
func TestPeerDiscover(t *testing.T) {
	var doc wire.DiscoveredList
	var methods []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			_ = json.NewEncoder(w).Encode(wire.Health{Status: "ok", Service: "llamatray"})
		case "/api/peers/discovered":
			methods = append(methods, r.Method)
			_ = json.NewEncoder(w).Encode(doc)
		default:
			methods = append(methods, r.Method+" "+r.URL.Path)
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("listen = \""+strings.TrimPrefix(srv.URL, "http://")+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runIt := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(append(args, "--config", path), Build{}, nil, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
		return out.String(), errb.String(), code
	}
	doc = wire.DiscoveredList{Enabled: true, Discovered: []wire.Discovered{{Name: "studio", Instance: "studio", URL: "http://10.0.0.7:8080", Version: "v1.2.0"}}}
	out, e, code := runIt("peer", "discover")
	if code != 0 || !strings.Contains(out, "studio") || !strings.Contains(out, "http://10.0.0.7:8080") || !strings.Contains(out, "v1.2.0") || !strings.Contains(e, "llamatray peer add") {
		t.Fatalf("table: %d %q %q", code, out, e)
	}
	out, _, code = runIt("peer", "discover", "--json")
	var got wire.DiscoveredList
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got.Discovered) != 1 || got.Discovered[0].URL != "http://10.0.0.7:8080" {
		t.Fatalf("json: %d %q %v", code, out, err)
	}
	doc = wire.DiscoveredList{Enabled: false}
	if _, e, code := runIt("peer", "discover"); code != 0 || !strings.Contains(e, "discover = false") {
		t.Errorf("off: %d %q", code, e)
	}
	doc = wire.DiscoveredList{Enabled: true}
	if _, e, code := runIt("peer", "discover"); code != 0 || !strings.Contains(e, "no other Llamatray") {
		t.Errorf("none: %d %q", code, e)
	}
	doc = wire.DiscoveredList{Enabled: true, Error: "mdns lookup: no multicast"}
	if _, e, code := runIt("peer", "discover"); code != 1 || !strings.Contains(e, "no multicast") {
		t.Errorf("failed look: %d %q", code, e)
	}
	if _, _, code := runIt("peer", "discover", "extra"); code != 2 {
		t.Errorf("extra argument: %d, want 2", code)
	}
	for _, m := range methods {
		if m != http.MethodGet {
			t.Errorf("peer discover sent %s", m)
		}
	}
}
