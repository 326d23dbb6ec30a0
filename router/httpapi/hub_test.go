package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

const hubRepo = "Org/Tiny-GGUF"

// hubRouter is a router with the Hub enabled against the stand-in, its catalog scanning the cache.
func hubRouter(t *testing.T, autoPull bool) (*httptest.Server, *fakeEngine, *fakehub.Hub, *catalog.Catalog) {
	t.Helper()
	fh := fakehub.New()
	t.Cleanup(fh.Close)
	if err := fh.AddModelRepo(t.TempDir(), hubRepo, "Q4_K_M", "Q8_0"); err != nil {
		t.Fatal(err)
	}
	cache := hub.Cache{Dir: filepath.Join(t.TempDir(), "hub")}
	cat := catalog.New(catalog.Options{Dirs: []string{cache.Dir}})
	c := &hub.Client{Endpoint: fh.URL()}
	var fe *fakeEngine
	rescan := func() {
		cat.Scan(context.Background())
		for _, m := range cat.Models() {
			fe.add(m.ID, "", m.HubName)
		}
	}
	mgr := hub.NewManager(c, cache, func(string, []string) error { rescan(); return nil }, nil)
	srv, fe, _ := testRouter(t, "", func(o *Options) {
		o.Catalog = cat
		o.Hub = &HubOptions{Manager: mgr, AutoPull: autoPull, Rescan: rescan,
			Params: func() catalog.EstimateParams { return catalog.EstimateParams{ContextSize: 512} }}
	})
	return srv, fe, fh, cat
}

func do(t *testing.T, method, url, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	json.NewDecoder(resp.Body).Decode(&doc)
	return resp, doc
}

// A pull through POST /models reports progress on /models/events, lands in the cache and
// answers to its name; DELETE /models removes it.
func TestPullEventsAndRemove(t *testing.T) {
	srv, fe, _, cat := hubRouter(t, false)
	evReq, _ := http.NewRequest("GET", srv.URL+"/models/events", nil)
	evResp, err := http.DefaultClient.Do(evReq)
	if err != nil {
		t.Fatal(err)
	}
	defer evResp.Body.Close()
	lines := bufio.NewScanner(evResp.Body)
	lines.Scan() // ": connected"

	resp, doc := do(t, "POST", srv.URL+"/models", `{"model":"org/tiny-gguf:q4_k_m"}`)
	if resp.StatusCode != http.StatusAccepted || doc["model"] != hubRepo+":Q4_K_M" || doc["status"] != "downloading" {
		t.Fatalf("POST /models: %d %v", resp.StatusCode, doc)
	}
	var sawDownloading bool
	deadline := time.After(10 * time.Second)
	done := make(chan string, 64)
	go func() {
		for lines.Scan() {
			done <- lines.Text()
		}
		close(done)
	}()
wait:
	for {
		select {
		case l := <-done:
			if !strings.HasPrefix(l, "data: ") {
				continue
			}
			var ev struct {
				Kind, State, Status, Model string
				Files                      []hub.FileProgress
			}
			json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &ev)
			if ev.Kind != "download" {
				continue
			}
			if ev.State == "downloading" && ev.Status == "downloading" && len(ev.Files) == 1 && ev.Files[0].Total > 0 {
				sawDownloading = true
			}
			if ev.State == "downloaded" {
				break wait
			}
		case <-deadline:
			t.Fatal("no downloaded event")
		}
	}
	if !sawDownloading {
		t.Error("no downloading event with per-file bytes")
	}
	m, ok := cat.Lookup(hubRepo + ":q4_k_m")
	if !ok {
		t.Fatal("pulled model not in the catalog")
	}
	if resp, doc := do(t, "POST", srv.URL+"/models", `{"model":"Org/Tiny-GGUF:Q4_K_M"}`); resp.StatusCode != 200 || doc["id"] != m.ID {
		t.Errorf("second pull: %d %v", resp.StatusCode, doc)
	}
	resp, doc = do(t, "DELETE", srv.URL+"/models?model=Org/Tiny-GGUF:Q4_K_M", "")
	if removed, _ := doc["removed"].([]any); resp.StatusCode != 200 || doc["id"] != m.ID || len(removed) == 0 {
		t.Fatalf("DELETE: %d %v", resp.StatusCode, doc)
	}
	if _, ok := cat.Lookup(hubRepo + ":Q4_K_M"); ok {
		t.Error("removed model still listed")
	}

	// A user's own file beside the cache is refused, and kept.
	dir, _, _ := strings.Cut(m.Path, "models--")
	own := filepath.Join(dir, "mine.gguf")
	if err := ggufwrite.WriteFile(own, ggufwrite.Header(ggufwrite.HeaderOptions{Blocks: 1, Embedding: 64, FFN: 128, Heads: 4, Vocab: 512, ContextLength: 256})); err != nil {
		t.Fatal(err)
	}
	cat.Scan(context.Background())
	fe.add("mine", "", "")
	resp, doc = do(t, "DELETE", srv.URL+"/models?model=mine", "")
	msg, _ := doc["error"].(map[string]any)["message"].(string)
	if resp.StatusCode != http.StatusConflict || doc["error"].(map[string]any)["code"] != "not_a_hub_model" || !strings.Contains(msg, "is the file "+own+", not a model pulled from the Hugging Face Hub") {
		t.Fatalf("DELETE of a user's own file: %d %v", resp.StatusCode, doc)
	}
	if _, err := os.Stat(own); err != nil {
		t.Errorf("the user's own file: %v", err)
	}
}

func TestPullErrorsAndNames(t *testing.T) {
	srv, _, fh, _ := hubRouter(t, false)
	if resp, doc := do(t, "POST", srv.URL+"/models", `{"model":"not a repo"}`); resp.StatusCode != 400 {
		t.Errorf("bad name: %d %v", resp.StatusCode, doc)
	}
	if resp, doc := do(t, "POST", srv.URL+"/models", `{"model":"Org/Tiny-GGUF:Q2_K"}`); resp.StatusCode != 404 {
		t.Errorf("missing quant: %d %v", resp.StatusCode, doc)
	}
	if resp, doc := do(t, "POST", srv.URL+"/models", `{"model":"Org/None:Q2_K"}`); resp.StatusCode != 404 {
		t.Errorf("missing repo: %d %v", resp.StatusCode, doc)
	}
	resp, doc := do(t, "POST", srv.URL+"/v1/chat/completions", `{"model":"Org/Tiny-GGUF:Q8_0","messages":[]}`)
	msg, _ := doc["error"].(map[string]any)["message"].(string)
	if resp.StatusCode != 404 || !strings.Contains(msg, "llamatray pull Org/Tiny-GGUF:Q8_0") {
		t.Errorf("chat with a model not pulled: %d %q", resp.StatusCode, msg)
	}
	fh.Gate(hubRepo, "tok")
	resp, doc = do(t, "POST", srv.URL+"/models", `{"model":"Org/Tiny-GGUF:Q8_0"}`)
	msg, _ = doc["error"].(map[string]any)["message"].(string)
	if resp.StatusCode != 401 || !strings.Contains(msg, "HF_TOKEN") {
		t.Errorf("gated: %d %q", resp.StatusCode, msg)
	}
}

func TestAutoPull(t *testing.T) {
	srv, _, _, cat := hubRouter(t, true)
	// A GET never starts a download: a web page could make a browser send it.
	if resp, doc := do(t, "GET", srv.URL+"/v1/models/"+url.PathEscape("Org/Tiny-GGUF:Q8_0"), ""); resp.StatusCode != 404 {
		t.Fatalf("GET with auto_pull: %d %v", resp.StatusCode, doc)
	}
	resp, doc := do(t, "POST", srv.URL+"/v1/chat/completions", `{"model":"Org/Tiny-GGUF:Q8_0","messages":[]}`)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("auto_pull: %d %v", resp.StatusCode, doc)
	}
	testbed.WaitFor(t, 10*time.Second, "the auto_pull download to be listed", func() bool {
		_, ok := cat.Lookup(hubRepo + ":Q8_0")
		return ok
	})
}

func TestHubSearchAndFiles(t *testing.T) {
	srv, _, _, _ := hubRouter(t, false)
	resp, doc := do(t, "GET", srv.URL+"/api/hub/search?q=tiny", "")
	data, _ := doc["data"].([]any)
	if resp.StatusCode != 200 || len(data) != 1 || data[0].(map[string]any)["id"] != hubRepo {
		t.Fatalf("search: %d %v", resp.StatusCode, doc)
	}
	resp, doc = do(t, "GET", srv.URL+"/api/hub/files?repo=Org/Tiny-GGUF", "")
	quants, _ := doc["quants"].([]any)
	if resp.StatusCode != 200 || len(quants) != 2 {
		t.Fatalf("files: %d %v", resp.StatusCode, doc)
	}
	for _, q := range quants {
		q := q.(map[string]any)
		if q["fit"] != "fits" || q["memory_bytes"].(float64) <= 0 || q["size"].(float64) <= 0 || q["downloaded"] != false {
			t.Errorf("quant %v", q)
		}
	}
	if resp, _ := do(t, "GET", srv.URL+"/api/hub/files", ""); resp.StatusCode != 400 {
		t.Errorf("no repo: %d", resp.StatusCode)
	}
}
