package ollama

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// testdata holds llama-server 0.7.0's own answers with logprobs (a random-weight model, seed 1 or 3,
// temperature 0): chat-logprobs.* to /v1/chat/completions with "logprobs": true, "top_logprobs": 2,
// completion-probs.* to /completion with "n_probs": 2; .json not streamed, .sse streamed.
func recorded(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// upstreamProbs are the logprobs llama-server gave in a recorded answer, in Ollama's shape.
func upstreamProbs(t *testing.T, name string) []Logprob {
	t.Helper()
	var out []Logprob
	for _, l := range strings.Split(string(recorded(t, name)), "\n") {
		l = strings.TrimPrefix(strings.TrimSpace(l), "data: ")
		if l == "" || l == "[DONE]" {
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			if ch.Logprobs != nil {
				out = append(out, ch.Logprobs.Content...)
			}
		}
		out = append(out, c.Probs...)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no logprobs", name)
	}
	return out
}

// Ollama's logprobs and top_logprobs become llama-server's: OpenAI's on the chat endpoint, n_probs
// (at least 1) on the native ones; top_logprobs outside 0-20 is refused as Ollama refuses it.
func TestLogprobsRequest(t *testing.T) {
	yes := false
	up, err := Chat(ChatRequest{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}, Logprobs: true, TopLogprobs: 2})
	if b := decode(t, up.Body); err != nil || b["logprobs"] != true || b["top_logprobs"] != 2.0 || up.TopLogprobs != 2 {
		t.Fatalf("chat %s %v", up.Body, err)
	}
	up, err = Generate(GenerateRequest{Model: "m", Prompt: "hi", Logprobs: true, Stream: &yes})
	if b := decode(t, up.Body); err != nil || b["logprobs"] != true || b["top_logprobs"] != nil {
		t.Fatalf("generate %s %v", up.Body, err)
	}
	up, err = Generate(GenerateRequest{Model: "m", Prompt: "hi", Raw: true, Logprobs: true})
	if b := decode(t, up.Body); err != nil || b["n_probs"] != 1.0 || up.Path != "/completion" || up.TopLogprobs != 0 {
		t.Fatalf("raw %s %v", up.Body, err)
	}
	up, err = Generate(GenerateRequest{Model: "m", Prompt: "def f(", Suffix: "\n", Logprobs: true, TopLogprobs: 3})
	if b := decode(t, up.Body); err != nil || b["n_probs"] != 3.0 || up.Path != "/infill" {
		t.Fatalf("infill %s %v", up.Body, err)
	}
	up, err = Chat(ChatRequest{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}})
	if b := decode(t, up.Body); err != nil || b["logprobs"] != nil || b["n_probs"] != nil {
		t.Fatalf("not asked %s %v", up.Body, err)
	}
	for _, n := range []int{-1, 21} {
		if _, err := Chat(ChatRequest{Model: "m", Logprobs: true, TopLogprobs: n}); err == nil || !strings.Contains(err.Error(), "top_logprobs must be between 0 and 20") {
			t.Errorf("top_logprobs %d: %v", n, err)
		}
	}
}

// llama-server's logprobs come back in Ollama's shape (token, logprob, bytes, top_logprobs, no id):
// streamed, each object with its tokens' logprobs; not streamed, all of them in the one object; at
// most top_logprobs alternatives each.
func TestLogprobsAnswer(t *testing.T) {
	for _, c := range []struct {
		kind   Kind
		file   string
		stream bool
		top    int
	}{
		{KindChat, "chat-logprobs.sse", true, 2},
		{KindChat, "chat-logprobs.json", false, 2},
		{KindGenerate, "chat-logprobs.sse", true, 1},
		{KindGenerate, "completion-probs.sse", true, 2},
		{KindGenerate, "completion-probs.json", false, 0},
	} {
		rec := httptest.NewRecorder()
		w := NewWriter(rec, c.kind, "m", c.stream, time.Now())
		w.TopLogprobs = c.top
		w.WriteHeader(200)
		w.Write(recorded(t, c.file))
		w.Finish()
		want := upstreamProbs(t, c.file)
		for i := range want {
			want[i].TopLogprobs = want[i].TopLogprobs[:c.top]
			if c.top == 0 {
				want[i].TopLogprobs = nil
			}
		}
		var got []Logprob
		objs := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
		for i, l := range objs {
			var o struct {
				Done     bool              `json:"done"`
				Logprobs []json.RawMessage `json:"logprobs"`
			}
			if err := json.Unmarshal([]byte(l), &o); err != nil {
				t.Fatalf("%s: %v in %s", c.file, err, l)
			}
			if c.stream && o.Done && len(o.Logprobs) > 0 {
				t.Errorf("%s: the last object repeats logprobs: %s", c.file, l)
			}
			if c.stream && !o.Done && len(o.Logprobs) == 0 {
				t.Errorf("%s: object %d has no logprobs: %s", c.file, i, l)
			}
			for _, raw := range o.Logprobs {
				var keys map[string]json.RawMessage
				json.Unmarshal(raw, &keys)
				if _, ok := keys["id"]; ok || keys["token"] == nil || keys["logprob"] == nil || keys["bytes"] == nil {
					t.Errorf("%s: not Ollama's shape: %s", c.file, raw)
				}
				var lp Logprob
				json.Unmarshal(raw, &lp)
				got = append(got, lp)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: logprobs\n got %+v\nwant %+v", c.file, got, want)
		}
	}
}
