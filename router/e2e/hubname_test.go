package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
)

// A model pulled as ORG/REPO:QUANT is listed under that name and answers under it, asked by that
// name or by its file name, streamed or not, in OpenAI's and Anthropic's shapes; its file name
// still reaches it, in a body and in a path.
func TestPulledModelAnswersUnderItsHubName(t *testing.T) {
	bin := testbed.RealLlamaServer(t)
	in := startFresh(t, bin, nil)
	const id = e2eRepo + ":Q8_0"
	fileID := strings.TrimSuffix(fakehub.FileName(e2eRepo, "Q8_0"), ".gguf")
	if last, _ := in.pull("org/tiny-gguf:q8_0"); last["status"] != "downloaded" {
		t.Fatalf("pull ended %v", last)
	}

	code, doc := in.call("GET", "/v1/models", "")
	var listed []string
	for _, m := range doc["data"].([]any) {
		listed = append(listed, m.(map[string]any)["id"].(string))
	}
	if code != 200 || len(listed) != 1 || listed[0] != id {
		t.Fatalf("GET /v1/models: %d %v, want [%s]", code, listed, id)
	}
	for _, p := range []string{"/v1/models/" + id, "/v1/models/" + url.PathEscape(id), "/v1/models/" + strings.ReplaceAll(url.PathEscape(id), "%2F", "/"), "/v1/models/" + fileID} {
		if code, doc := in.call("GET", p, ""); code != 200 || doc["id"] != id || doc["meta"].(map[string]any)["file_id"] != fileID {
			t.Errorf("GET %s: %d %v", p, code, doc)
		}
	}

	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", string(chatBody(id, false, 4))},
		{"/v1/chat/completions", string(chatBody(fileID, false, 4))},
		{"/v1/chat/completions", string(chatBody("org/tiny-gguf:q8_0", false, 4))},
		{"/v1/completions", `{"model":"` + fileID + `","prompt":"Hello","max_tokens":4}`},
		{"/v1/messages", `{"model":"` + fileID + `","max_tokens":4,"messages":[{"role":"user","content":"Hi"}]}`},
	} {
		code, doc := in.call("POST", c.path, c.body)
		if code != 200 || doc["model"] != id {
			t.Errorf("POST %s %s: %d, model %v (want %s)", c.path, c.body, code, doc["model"], id)
		}
	}

	// Streamed: every chunk names it.
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", string(chatBody(fileID, true, 4))},
		{"/v1/messages", `{"model":"` + fileID + `","max_tokens":4,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`},
	} {
		req, _ := http.NewRequest("POST", in.base+c.path, bytes.NewReader([]byte(c.body)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("stream %s: %v %d %s", c.path, err, resp.StatusCode, b)
		}
		chunks := 0
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("chunk %q: %v", data, err)
			}
			model, _ := ev["model"].(string)
			if msg, ok := ev["message"].(map[string]any); ok { // Anthropic's message_start
				model, _ = msg["model"].(string)
			}
			if _, has := ev["model"]; has || ev["type"] == "message_start" {
				chunks++
				if model != id {
					t.Errorf("stream %s: a chunk names %q: %s", c.path, model, data)
				}
			}
		}
		resp.Body.Close()
		if chunks == 0 {
			t.Errorf("stream %s: no chunk named a model", c.path)
		}
	}

	// Ollama's API lists it as hf.co/ORG/REPO:QUANT and, as Ollama does, answers under the name asked.
	code, doc = in.call("GET", "/api/tags", "")
	if ms, _ := doc["models"].([]any); code != 200 || len(ms) != 1 || ms[0].(map[string]any)["name"] != "hf.co/"+id {
		t.Errorf("GET /api/tags: %d %v", code, doc)
	}
	for _, asked := range []string{"hf.co/" + id, id} {
		code, doc := in.call("POST", "/api/chat", `{"model":"`+asked+`","stream":false,"options":{"num_predict":4},"messages":[{"role":"user","content":"Hi"}]}`)
		if code != 200 || doc["model"] != asked {
			t.Errorf("POST /api/chat as %s: %d, model %v", asked, code, doc["model"])
		}
	}

	// Paths with the ID in them: the upstream passthrough, escaped or not.
	for _, p := range []string{"/upstream/" + id + "/health", "/upstream/" + url.PathEscape(id) + "/health", "/upstream/" + fileID + "/health"} {
		if code, doc := in.call("GET", p, ""); code != 200 {
			t.Errorf("GET %s: %d %v", p, code, doc)
		}
	}
}
