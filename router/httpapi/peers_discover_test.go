package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/wire"
)

// GET /api/peers/discovered gives what discovery found (an empty list, not null, when nothing),
// 404 where the server has no discovery; DELETE /api/peers/discovered still removes a peer so named.
func TestDiscoveredRoute(t *testing.T) {
	seen := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	lists := []wire.DiscoveredList{
		{Enabled: true, Discovered: []wire.Discovered{{Name: "studio", Instance: "studio", URL: "http://10.0.0.7:8080", Version: "v1", LastSeen: seen}}},
		{Enabled: false},
		{Enabled: true, Error: "mdns lookup: no multicast"},
	}
	var removed string
	i := 0
	srv, _, _ := testRouter(t, "http://127.0.0.1:1", func(o *Options) {
		o.Discovered = func() wire.DiscoveredList { l := lists[i]; i++; return l }
		o.RemovePeer = func(name string) error { removed = name; return nil }
	})
	get := func() (int, map[string]any) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/api/peers/discovered")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, doc
	}
	code, doc := get()
	found, _ := doc["discovered"].([]any)
	if code != 200 || doc["enabled"] != true || len(found) != 1 {
		t.Fatalf("first: %d %v", code, doc)
	}
	if e := found[0].(map[string]any); e["name"] != "studio" || e["url"] != "http://10.0.0.7:8080" || e["version"] != "v1" || e["last_seen"] != "2026-01-02T03:04:05Z" {
		t.Errorf("entry: %v", e)
	}
	code, doc = get()
	if l, ok := doc["discovered"].([]any); code != 200 || doc["enabled"] != false || !ok || len(l) != 0 {
		t.Errorf("off: %d %v", code, doc)
	}
	code, doc = get()
	if code != 200 || doc["error"] != "mdns lookup: no multicast" {
		t.Errorf("failed look: %d %v", code, doc)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/api/peers/discovered", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || removed != "discovered" {
		t.Errorf("DELETE /api/peers/discovered: %d, removed %q", resp.StatusCode, removed)
	}

	none, _, _ := testRouter(t, "http://127.0.0.1:1", nil)
	resp, err = http.Get(none.URL + "/api/peers/discovered")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("without discovery: %d, want 404", resp.StatusCode)
	}
}
