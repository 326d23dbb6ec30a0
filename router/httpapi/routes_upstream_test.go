package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/catalog"
)

const hubID = "Org/Repo-GGUF:Q8_0"

// hubRouter is testRouter with a second model named ORG/REPO:QUANT, its file name an alias.
func hubIDRouter(t *testing.T) (string, chan seen) {
	up, got := recordingUpstream(t)
	srv, _, _ := testRouter(t, up.URL, func(o *Options) {
		o.Engine.(*fakeEngine).add(hubID, up.URL, "repo-Q8_0")
		o.Catalog.(fakeCatalog)[hubID] = catalog.Model{ID: hubID, Path: "/hub/repo-Q8_0.gguf", HubName: hubID, HubRepo: "Org/Repo-GGUF", FileID: "repo-Q8_0", Aliases: []string{"repo-Q8_0"}, Splits: 1}
	})
	return srv.URL, got
}

// /upstream/{model}/... takes an ID with "/" and ":" as it is, escaped whole or in part, or by its
// alias; the rest of the path reaches the child unchanged.
func TestUpstreamHubID(t *testing.T) {
	base, got := hubIDRouter(t)
	for _, c := range []struct{ method, path, want string }{
		{http.MethodGet, "/upstream/Org/Repo-GGUF:Q8_0/health", "/health"},
		{http.MethodGet, "/upstream/Org%2FRepo-GGUF:Q8_0/health", "/health"},
		{http.MethodGet, "/upstream/Org%2FRepo-GGUF%3AQ8_0/x%2Fy/z", "/x%2Fy/z"},
		{http.MethodGet, "/upstream/Org/Repo-GGUF:Q8_0/", "/"},
		{http.MethodPost, "/upstream/Org/Repo-GGUF:Q8_0", "/"},
		{http.MethodGet, "/upstream/repo-Q8_0/v1/models", "/v1/models"},
		{http.MethodGet, "/upstream/m1/Org/Repo-GGUF:Q8_0", "/Org/Repo-GGUF:Q8_0"}, // a path of m1's
	} {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader(""))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s: %d %s", c.method, c.path, resp.StatusCode, b)
			continue
		}
		s := <-got
		p := s.Path
		if s.RawPath != "" {
			p = s.RawPath
		}
		if p != c.want {
			t.Errorf("%s %s reached the child as %s, want %s", c.method, c.path, p, c.want)
		}
	}

	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Get(base + "/upstream/Org/Repo-GGUF:Q8_0?x=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/upstream/Org/Repo-GGUF:Q8_0/?x=1" {
		t.Errorf("redirect: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, err = http.Get(base + "/upstream/Org/nothing:Q8_0/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown model: %d", resp.StatusCode)
	}
}

// GET /v1/models/{model} takes an ID with "/" and ":" escaped or not, and its file-name alias.
func TestGetModelHubID(t *testing.T) {
	base, _ := hubIDRouter(t)
	for _, p := range []string{"Org/Repo-GGUF:Q8_0", "Org%2FRepo-GGUF:Q8_0", "Org%2FRepo-GGUF%3AQ8_0", "repo-Q8_0"} {
		resp, err := http.Get(base + "/v1/models/" + p)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			ID string `json:"id"`
		}
		json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || doc.ID != hubID {
			t.Errorf("GET /v1/models/%s: %d %q", p, resp.StatusCode, doc.ID)
		}
	}
	if resp, err := http.Get(base + "/v1/models/Org/nothing"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown model: %v %v", resp.StatusCode, err)
	}
}
