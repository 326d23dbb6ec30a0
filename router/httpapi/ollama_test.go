package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/catalog"
)

func postJSON(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func ndjson(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v in %q", err, l)
		}
		out = append(out, m)
	}
	return out
}

// An app that speaks only Ollama's API finds it, lists, shows and chats through the same leases.
func TestOllamaThroughFakeLlamaServer(t *testing.T) {
	fake, _ := startFakeLlama(t, "", "FAKE_LLAMA_TOKENS=12", "FAKE_LLAMA_TOKEN_DELAY=20ms")
	srv, fe, _ := testRouter(t, fake, nil)

	for _, m := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(m, srv.URL+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || (m == http.MethodGet && string(b) != "Ollama is running") {
			t.Errorf("%s /: %d %q", m, resp.StatusCode, b)
		}
	}
	if code, b := getBody(t, srv.URL+"/api/version"); code != 200 || !strings.Contains(string(b), `"version"`) {
		t.Errorf("version %d %s", code, b)
	}
	code, b := getBody(t, srv.URL+"/api/tags")
	var tags struct {
		Models []struct {
			Name, Model, Digest string
			Size                int64
			Details             struct {
				Format, Family, ParameterSize, QuantizationLevel string `json:"-"`
			}
			Raw map[string]any `json:"details"`
		} `json:"models"`
	}
	if err := json.Unmarshal(b, &tags); err != nil || code != 200 || len(tags.Models) != 1 {
		t.Fatalf("tags %d %s %v", code, b, err)
	}
	if m := tags.Models[0]; m.Name != "m1:latest" || m.Model != "m1:latest" || len(m.Digest) != 64 || m.Size != 4<<30 ||
		m.Raw["family"] != "llama" || m.Raw["parameter_size"] != "7B" || m.Raw["quantization_level"] != "Q4_K_M" || m.Raw["format"] != "gguf" {
		t.Errorf("tags %s", b)
	}
	resp, b := postJSON(t, srv.URL+"/api/show", `{"model":"m1:latest"}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"capabilities":["completion","tools"]`) {
		t.Errorf("show %d %s", resp.StatusCode, b)
	}
	resp, b = postJSON(t, srv.URL+"/api/show", `{"model":"nope"}`)
	if resp.StatusCode != 404 || string(b) != `{"error":"model 'nope:latest' not found"}`+"\n" { // Ollama's words for /api/show
		t.Errorf("show unknown %d %s", resp.StatusCode, b)
	}
	// Ollama's ShowRequest: verbose is a bool, stream is no field of it.
	if resp, b = postJSON(t, srv.URL+"/api/show", `{"model":"m1:latest","verbose":"yes"}`); resp.StatusCode != 400 {
		t.Errorf("show with a verbose that is no bool: %d %s", resp.StatusCode, b)
	}
	if resp, b = postJSON(t, srv.URL+"/api/show", `{"model":"m1:latest","verbose":true,"stream":"x"}`); resp.StatusCode != 200 {
		t.Errorf("show with a stream it has no field for: %d %s", resp.StatusCode, b)
	}

	// A streamed chat: NDJSON objects arrive while the child still generates.
	resp, err := http.Post(srv.URL+"/api/chat", "application/json", strings.NewReader(`{"model":"fast","messages":[{"role":"user","content":"hi"}],"keep_alive":"10m","options":{"seed":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var objs []map[string]any
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%v in %q", err, sc.Text())
		}
		objs = append(objs, m)
		if len(objs) == 1 && fe.active("m1") != 1 {
			t.Fatal("the first object came after the lease was released: the answer was buffered")
		}
	}
	resp.Body.Close()
	last := objs[len(objs)-1]
	if len(objs) < 3 || last["done"] != true || last["done_reason"] != "stop" || last["eval_count"].(float64) < 1 || last["model"] != "fast" {
		t.Fatalf("%d objects, last %v", len(objs), last)
	}
	var text strings.Builder
	for _, o := range objs[:len(objs)-1] {
		text.WriteString(o["message"].(map[string]any)["content"].(string))
	}
	if text.Len() == 0 {
		t.Error("no text streamed")
	}
	waitReleased(t, fe, 1)

	resp, b = postJSON(t, srv.URL+"/api/chat", `{"model":"m1","stream":false,"messages":[{"role":"user","content":"hi"}]}`)
	var one map[string]any
	if json.Unmarshal(b, &one); resp.StatusCode != 200 || one["done"] != true || one["message"].(map[string]any)["content"] == "" {
		t.Errorf("chat without stream %d %s", resp.StatusCode, b)
	}
	resp, b = postJSON(t, srv.URL+"/api/generate", `{"model":"m1","prompt":"once","options":{"num_predict":3}}`)
	if g := ndjson(t, b); resp.StatusCode != 200 || g[len(g)-1]["done"] != true || g[0]["response"] == nil {
		t.Errorf("generate %d %s", resp.StatusCode, b)
	}
	resp, b = postJSON(t, srv.URL+"/api/generate", `{"model":"m1","prompt":"raw text","raw":true,"stream":false}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"done":true`) {
		t.Errorf("raw generate %d %s", resp.StatusCode, b)
	}
	resp, b = postJSON(t, srv.URL+"/api/embed", `{"model":"m1","input":["a","b"],"prompt":5}`) // prompt: /api/embeddings' field
	var emb struct{ Embeddings [][]float64 }
	if json.Unmarshal(b, &emb); resp.StatusCode != 200 || len(emb.Embeddings) != 2 || len(emb.Embeddings[0]) == 0 {
		t.Errorf("embed %d %s", resp.StatusCode, b)
	}
	resp, b = postJSON(t, srv.URL+"/api/embeddings", `{"model":"m1","prompt":"a","truncate":"x","input":7}`) // /api/embed's fields
	if resp.StatusCode != 200 || !strings.HasPrefix(string(b), `{"embedding":[`) {
		t.Errorf("embeddings %d %s", resp.StatusCode, b)
	}
	fe.mu.Lock()
	calls := strings.Join(fe.calls, ",")
	fe.mu.Unlock()
	if !strings.Contains(calls, "keepalive m1 10m0s") || !strings.Contains(calls, "keepalive m1 default") {
		t.Errorf("keep_alive calls: %s", calls)
	}
}

// Requests with nothing to answer load or unload the model, as Ollama's do; bad bodies and
// unknown models answer Ollama's errors.
func TestOllamaLoadUnloadAndErrors(t *testing.T) {
	srv, fe, _ := testRouter(t, "http://127.0.0.1:1", nil)
	resp, b := postJSON(t, srv.URL+"/api/generate", `{"model":"m1"}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"done_reason":"load"`) {
		t.Errorf("load %d %s", resp.StatusCode, b)
	}
	resp, b = postJSON(t, srv.URL+"/api/chat", `{"model":"m1","messages":[],"keep_alive":0}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"done_reason":"unload"`) {
		t.Errorf("unload %d %s", resp.StatusCode, b)
	}
	fe.mu.Lock()
	calls := strings.Join(fe.calls, ",")
	fe.mu.Unlock()
	if !strings.Contains(calls, "load m1") || !strings.Contains(calls, "unload m1") {
		t.Errorf("calls %s", calls)
	}
	for body, want := range map[string]string{
		`{"model":`: "invalid", `{"messages":[]}`: "model is required",
		`{"model":"m1","messages":[{"role":"user","content":"x"}],"options":{"temperature":"hot"}}`: "must be a number",
		`{"model":"nope","messages":[{"role":"user","content":"x"}]}`:                               `model 'nope' not found`,
	} {
		resp, b := postJSON(t, srv.URL+"/api/chat", body)
		if resp.StatusCode/100 != 4 || !strings.HasPrefix(string(b), `{"error":"`) || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %s", body, resp.StatusCode, b)
		}
	}
	resp, b = postJSON(t, srv.URL+"/api/create", `{"model":"x"}`)
	if resp.StatusCode != 501 || !strings.Contains(string(b), "GGUF") {
		t.Errorf("create %d %s", resp.StatusCode, b)
	}
	resp, b = postJSON(t, srv.URL+"/api/pull", `{"model":"hf.co/org/repo:Q4_K_M"}`)
	if resp.StatusCode != 501 || !strings.Contains(string(b), "Hugging Face") {
		t.Errorf("pull without the Hub %d %s", resp.StatusCode, b)
	}
	// A page of another site cannot load a model through Ollama's load request.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/generate", strings.NewReader(`{"model":"m1"}`))
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site load: %d", r2.StatusCode)
	}
	// The fake engine reports m1 loaded.
	if code, b := getBody(t, srv.URL+"/api/ps"); code != 200 || !strings.Contains(string(b), `"name":"m1:latest"`) || !strings.Contains(string(b), `"expires_at":"`) {
		t.Errorf("ps %d %s", code, b)
	}
}

// A model of an Ollama store gets the params and system layers of the name the request used, under
// what the request itself sets.
func TestOllamaStoreDefaults(t *testing.T) {
	up, seenCh := recordingUpstream(t)
	srv, fe, _ := testRouter(t, up.URL, func(o *Options) {
		o.Catalog = fakeCatalog{"m1": {ID: "m1", Path: "/store/blobs/sha256-" + strings.Repeat("a", 64), Architecture: "llama", ChatTemplate: true,
			Ollama: []catalog.OllamaName{
				{Name: "m1:latest", Defaults: map[string]any{"temperature": 0.7, "stop": []any{"<|im_end|>"}}, System: "You are m1."},
				{Name: "coder:v1", Defaults: map[string]any{"temperature": 0.1}, System: "You write code."}},
			Defaults: map[string]any{"temperature": 0.7, "stop": []any{"<|im_end|>"}}}}
	})
	fe.add("m1", up.URL, "fast", "coder:v1") // the catalog resolves a store's every name
	body := func(req string) map[string]any {
		if resp, b := postJSON(t, srv.URL+"/api/chat", req); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", req, resp.StatusCode, b)
		}
		s := <-seenCh
		var b map[string]any
		if err := json.Unmarshal(s.Body, &b); err != nil {
			t.Fatalf("%v: %s", err, s.Body)
		}
		return b
	}
	b := body(`{"model":"m1","stream":false,"messages":[{"role":"user","content":"hi"}],"options":{"seed":3}}`)
	first := b["messages"].([]any)[0].(map[string]any)
	if b["temperature"] != 0.7 || b["seed"] != 3.0 || first["role"] != "system" || first["content"] != "You are m1." {
		t.Errorf("m1: %v", b)
	}
	b = body(`{"model":"coder:v1","stream":false,"messages":[{"role":"user","content":"hi"}],"options":{"temperature":0.5}}`)
	first = b["messages"].([]any)[0].(map[string]any)
	if b["temperature"] != 0.5 || first["content"] != "You write code." || b["stop"] != nil {
		t.Errorf("coder:v1: %v", b)
	}
	if _, tags := getBody(t, srv.URL+"/api/tags"); !strings.Contains(string(tags), `"name":"coder:v1"`) {
		t.Errorf("tags: %s", tags)
	}
}

// POST /api/copy makes the destination an alias of the source's model; deleting that name takes the
// alias away and leaves the model.
func TestOllamaCopyIsAnAlias(t *testing.T) {
	var calls []string
	cat := fakeCatalog{"m1": {ID: "m1", Path: "/models/m1.gguf", Architecture: "llama", Aliases: []string{"kept"}}}
	srv, fe, _ := testRouter(t, "http://127.0.0.1:1", func(o *Options) {
		o.Catalog = cat
		o.Alias = func(id, alias string, add bool) error {
			calls = append(calls, fmt.Sprintf("%s %s %v", id, alias, add))
			return nil
		}
	})
	if resp, b := postJSON(t, srv.URL+"/api/copy", `{"source":"m1:latest","destination":"my-copy:latest"}`); resp.StatusCode != 200 || len(b) != 0 {
		t.Fatalf("copy %d %q", resp.StatusCode, b)
	}
	if resp, b := postJSON(t, srv.URL+"/api/copy", `{"source":"nope","destination":"x"}`); resp.StatusCode != 404 || string(b) != `{"error":"model \"nope\" not found"}`+"\n" {
		t.Errorf("copy of an unknown model %d %s", resp.StatusCode, b)
	}
	if resp, _ := postJSON(t, srv.URL+"/api/copy", `{"source":"m1","destination":"../x"}`); resp.StatusCode != 400 {
		t.Errorf("copy to a path: %d", resp.StatusCode)
	}
	if _, tags := getBody(t, srv.URL+"/api/tags"); !strings.Contains(string(tags), `"name":"kept:latest"`) || !strings.Contains(string(tags), `"name":"m1:latest"`) {
		t.Errorf("tags: %s", tags)
	}
	fe.add("m1", "http://127.0.0.1:1", "fast", "kept") // the engine resolves the catalog's aliases
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/api/delete", strings.NewReader(`{"model":"kept:latest"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := strings.Join(calls, ","); resp.StatusCode != 200 || got != "m1 my-copy true,m1 kept false" {
		t.Errorf("delete of a copy: %d, calls %s", resp.StatusCode, got)
	}
}
