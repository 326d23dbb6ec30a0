package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// recordedOllama are a real Ollama's answers (0.33, see the folder's README).
const recordedOllama = "../testbed/testdata/ollama"

func readOllama(t *testing.T, name string) []byte {
	t.Helper()
	return readRecordedIn(t, recordedOllama, name)
}

// ndjsonLines are a recorded stream's objects, as raw JSON.
func ndjsonLines(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		out = append(out, []byte(l))
	}
	return out
}

// ollamaSkip are the fields of Ollama's answers Llamatray has no counterpart for (the README's
// table says why): generate's context token array, show's tensors, license, parameter text and
// system prompt of a Modelfile, and the GGUF keys of model_info other than the ones served.
var ollamaSkip = map[string]bool{"context": true, "tensors": true, "license": true, "parameters": true, "system": true}

// showSkip is ollamaSkip plus every model_info key of the recording but those Llamatray gives.
func showSkip(t *testing.T, recorded []byte) map[string]bool {
	var doc struct {
		ModelInfo map[string]any `json:"model_info"`
	}
	if err := json.Unmarshal(recorded, &doc); err != nil {
		t.Fatal(err)
	}
	skip := map[string]bool{}
	for k := range ollamaSkip {
		skip[k] = true
	}
	served := map[string]bool{"general.architecture": true, "general.parameter_count": true, "llama.context_length": true, "llama.embedding_length": true}
	for k := range doc.ModelInfo {
		if !served[k] {
			skip["model_info."+k] = true
		}
	}
	return skip
}

// Llamatray's Ollama answers have every field a real Ollama's have, with the same JSON types, and
// its errors the same statuses and messages.
func TestOllamaParity(t *testing.T) {
	fake, _ := startFakeLlama(t, "", "FAKE_LLAMA_TOKENS=6")
	srv, _, _ := testRouter(t, fake, func(o *Options) {
		o.Catalog = fakeCatalog{"m1": {ID: "m1", Path: "/models/m1.gguf", Architecture: "llama", Parameters: 174_000, Quantization: "Q8_0",
			SizeBytes: 704321, ContextLength: 2048, EmbeddingLen: 64, ChatTemplate: true, Splits: 1, ModTime: time.Unix(1700000000, 0)}}
	})
	post := func(path, body string) []byte {
		_, b := postJSON(t, srv.URL+path, body)
		return b
	}
	get := func(path string) []byte {
		_, b := getBody(t, srv.URL+path)
		return b
	}
	checkShape(t, "GET /api/version", readOllama(t, "version.json"), get("/api/version"), nil)
	checkShape(t, "GET /api/tags", readOllama(t, "tags.json"), get("/api/tags"), nil)
	checkShape(t, "GET /api/ps", readOllama(t, "ps.json"), get("/api/ps"), nil)
	show := readOllama(t, "show.json")
	checkShape(t, "POST /api/show", show, post("/api/show", `{"model":"m1"}`), showSkip(t, show))

	chat := `{"model":"m1","messages":[{"role":"user","content":"Why is the sky blue?"}],"options":{"seed":1,"num_predict":8,"temperature":0}`
	want, got := ndjsonLines(t, readOllama(t, "chat.ndjson")), ndjsonLines(t, post("/api/chat", chat+`}`))
	checkShape(t, "POST /api/chat, first object", want[0], got[0], nil)
	checkShape(t, "POST /api/chat, last object", want[len(want)-1], got[len(got)-1], nil)
	checkShape(t, "POST /api/chat stream:false", readOllama(t, "chat-nostream.json"), post("/api/chat", chat+`,"stream":false}`), nil)
	gen := `{"model":"m1","prompt":"Why is the sky blue?","options":{"seed":1,"num_predict":8,"temperature":0}`
	want, got = ndjsonLines(t, readOllama(t, "generate.ndjson")), ndjsonLines(t, post("/api/generate", gen+`}`))
	checkShape(t, "POST /api/generate, first object", want[0], got[0], ollamaSkip)
	checkShape(t, "POST /api/generate, last object", want[len(want)-1], got[len(got)-1], ollamaSkip)
	checkShape(t, "POST /api/generate stream:false", readOllama(t, "generate-nostream.json"), post("/api/generate", gen+`,"stream":false}`), ollamaSkip)
	checkShape(t, "POST /api/generate to load", readOllama(t, "generate-load.json"), post("/api/generate", `{"model":"m1"}`), nil)
	checkShape(t, "POST /api/chat to load", readOllama(t, "chat-load.json"), post("/api/chat", `{"model":"m1","messages":[]}`), nil)
	checkShape(t, "POST /api/generate to unload", readOllama(t, "generate-unload.json"), post("/api/generate", `{"model":"m1","keep_alive":0}`), nil)
	checkShape(t, "POST /api/embed", readOllama(t, "embed.json"), post("/api/embed", `{"model":"m1","input":"Why is the sky blue?"}`), nil)
	checkShape(t, "POST /api/embeddings", readOllama(t, "embeddings.json"), post("/api/embeddings", `{"model":"m1","prompt":"Why is the sky blue?"}`), nil)

	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, b := getBody(t, srv.URL+"/"); string(b) != string(readOllama(t, "root.txt")) {
		t.Errorf("GET /: %q", b)
	}

	var errs map[string]struct {
		Request     string          `json:"request"`
		RequestBody json.RawMessage `json:"request_body"`
		Status      int             `json:"status"`
		Body        struct {
			Error string `json:"error"`
		} `json:"body"`
	}
	if err := json.Unmarshal(readOllama(t, "errors.json"), &errs); err != nil {
		t.Fatal(err)
	}
	// The same status and message as Ollama's; a malformed body is refused with 400 in both, each with
	// its own parser's words.
	for _, name := range []string{"chat_unknown_model", "generate_unknown_model", "embed_unknown_model", "show_unknown",
		"generate_no_model", "chat_no_model", "empty_body", "delete_unknown", "malformed_json"} {
		e, ok := errs[name]
		if !ok {
			t.Fatalf("no recorded %s", name)
		}
		method, path, _ := strings.Cut(e.Request, " ")
		body := string(e.RequestBody)
		if body == "null" {
			body = ""
		}
		if name == "malformed_json" {
			body = `{"model":`
		}
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if resp.StatusCode != e.Status || (name != "malformed_json" && doc.Error != e.Body.Error) || doc.Error == "" {
			t.Errorf("%s: %d %q, Ollama answers %d %q", name, resp.StatusCode, doc.Error, e.Status, e.Body.Error)
		}
	}
}
