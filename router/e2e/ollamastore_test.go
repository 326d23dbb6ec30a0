package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
)

// snapshotTree lists every path under dir with its size and time, to tell whether anything changed.
func snapshotTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %s %s %d\n", p, info.Mode(), info.ModTime(), info.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// An Ollama store is served in place: its models are listed under Ollama's names and answer through
// Ollama's API and the OpenAI API alike, and nothing is written into the store.
func TestOllamaStoreServedInPlace(t *testing.T) {
	store := filepath.Join(t.TempDir(), "ollama", "models")
	testbed.OllamaStore(t, store)
	before := snapshotTree(t, store)
	in := start(t, nil, func(c *config.Config) { c.ModelDirs = append(c.ModelDirs, store) })

	resp, err := http.Get(in.base + "/api/tags")
	if err != nil {
		t.Fatal(err)
	}
	var tags struct{ Models []struct{ Name string } }
	json.NewDecoder(resp.Body).Decode(&tags)
	resp.Body.Close()
	var names []string
	for _, m := range tags.Models {
		names = append(names, m.Name)
	}
	for _, want := range []string{"tiny:latest", "tiny2:v1", "tiny-raw:latest", "tiny-embed:latest"} {
		if !strings.Contains(","+strings.Join(names, ",")+",", ","+want+",") {
			t.Errorf("/api/tags lists %v, without %s", names, want)
		}
	}

	post := func(path, body string) (int, string) {
		resp, err := http.Post(in.base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post("/api/chat", `{"model":"tiny","stream":false,"messages":[{"role":"user","content":"Hello"}],"options":{"num_predict":4,"seed":1}}`)
	var chat struct {
		Done      bool `json:"done"`
		EvalCount int  `json:"eval_count"`
	}
	if json.Unmarshal([]byte(body), &chat); code != 200 || !chat.Done || chat.EvalCount == 0 {
		t.Fatalf("Ollama's API: %d %s", code, body)
	}
	code, body = post("/v1/chat/completions", `{"model":"tiny2:v1","max_tokens":4,"messages":[{"role":"user","content":"Hello"}]}`)
	if code != 200 || !strings.Contains(body, `"choices"`) {
		t.Fatalf("the OpenAI API: %d %s", code, body)
	}
	code, body = post("/api/embed", `{"model":"tiny-embed","input":["a","b"]}`)
	var emb struct{ Embeddings [][]float64 }
	if json.Unmarshal([]byte(body), &emb); code != 200 || len(emb.Embeddings) != 2 || len(emb.Embeddings[0]) != 64 {
		t.Fatalf("embed with the store's embedding model: %d %s", code, body)
	}
	// Deleting a model of Ollama's store is refused: Llamatray never writes there.
	req, _ := http.NewRequest(http.MethodDelete, in.base+"/api/delete", strings.NewReader(`{"model":"tiny"}`))
	dr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	dr.Body.Close()
	if dr.StatusCode != http.StatusConflict {
		t.Errorf("delete of a store model: %d", dr.StatusCode)
	}
	in.svc.Engine().Unload(t.Context(), "tiny:latest", true)
	if after := snapshotTree(t, store); after != before {
		t.Errorf("the store changed:\nbefore\n%s\nafter\n%s", before, after)
	}
}
