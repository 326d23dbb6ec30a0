package ollama

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return m
}

func TestChatRequestMapping(t *testing.T) {
	no := false
	req := ChatRequest{Model: "m", Stream: &no,
		Messages: []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "look", Images: []string{"iVBORw0KGgo="}},
			{Role: "assistant", ToolCalls: []ToolCall{{Function: ToolCallFunction{Name: "f", Arguments: json.RawMessage(`{"x":1}`)}}}},
			{Role: "tool", Content: "42", ToolName: "f"}},
		Tools:   json.RawMessage(`[{"type":"function","function":{"name":"f"}}]`),
		Format:  json.RawMessage(`{"type":"object"}`),
		Options: map[string]any{"temperature": 0.5, "num_predict": 8.0, "top_k": 40.0, "seed": 1.0, "stop": "\n", "num_ctx": 4096.0, "min_p": 0.1},
		Think:   json.RawMessage(`false`)}
	up, err := Chat(req)
	if err != nil {
		t.Fatal(err)
	}
	b := decode(t, up.Body)
	if up.Path != "/v1/chat/completions" || up.Stream || b["stream"] != false || b["max_tokens"] != 8.0 || b["temperature"] != 0.5 ||
		b["top_k"] != 40.0 || b["seed"] != 1.0 || b["min_p"] != 0.1 || b["n_predict"] != nil || b["num_ctx"] != nil {
		t.Errorf("body %s", up.Body)
	}
	if s, _ := b["stop"].([]any); len(s) != 1 || s[0] != "\n" {
		t.Errorf("stop %v", b["stop"])
	}
	rf := b["response_format"].(map[string]any)
	if rf["type"] != "json_schema" {
		t.Errorf("format %v", rf)
	}
	if k := b["chat_template_kwargs"].(map[string]any); k["enable_thinking"] != false {
		t.Errorf("think %v", k)
	}
	msgs := b["messages"].([]any)
	user := msgs[1].(map[string]any)["content"].([]any)
	if img := user[1].(map[string]any)["image_url"].(map[string]any)["url"].(string); !strings.HasPrefix(img, "data:image/png;base64,") {
		t.Errorf("image %v", img)
	}
	call := msgs[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)
	if call["arguments"] != `{"x":1}` || call["name"] != "f" {
		t.Errorf("tool call %v", call)
	}
	if msgs[3].(map[string]any)["name"] != "f" {
		t.Errorf("tool answer %v", msgs[3])
	}
}

func TestRequestErrors(t *testing.T) {
	for name, req := range map[string]ChatRequest{
		"role":        {Model: "m", Messages: []Message{{Role: "robot"}}},
		"option type": {Model: "m", Messages: []Message{{Role: "user"}}, Options: map[string]any{"temperature": "hot"}},
		"int option":  {Model: "m", Messages: []Message{{Role: "user"}}, Options: map[string]any{"top_k": 1.5}},
		"format":      {Model: "m", Messages: []Message{{Role: "user"}}, Format: json.RawMessage(`"yaml"`)},
		"think":       {Model: "m", Messages: []Message{{Role: "user"}}, Think: json.RawMessage(`"max"`)},
	} {
		if _, err := Chat(req); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Generate(GenerateRequest{Model: "m", Prompt: "x", Template: "{{.Prompt}}"}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("template: %v", err)
	}
}

func TestGenerateMapping(t *testing.T) {
	up, err := Generate(GenerateRequest{Model: "m", Prompt: "hi", System: "sys", Format: json.RawMessage(`"json"`)})
	if err != nil {
		t.Fatal(err)
	}
	b := decode(t, up.Body)
	if up.Path != "/v1/chat/completions" || !up.Stream || len(b["messages"].([]any)) != 2 || b["response_format"].(map[string]any)["type"] != "json_object" {
		t.Errorf("%s", up.Body)
	}
	up, err = Generate(GenerateRequest{Model: "m", Prompt: "raw text", Raw: true, Options: map[string]any{"num_predict": 4.0}})
	if err != nil {
		t.Fatal(err)
	}
	b = decode(t, up.Body)
	if up.Path != "/completion" || b["prompt"] != "raw text" || b["n_predict"] != 4.0 {
		t.Errorf("raw %s", up.Body)
	}
	up, err = Generate(GenerateRequest{Model: "m", Prompt: "func a() {", Suffix: "}\n"})
	if err != nil {
		t.Fatal(err)
	}
	b = decode(t, up.Body)
	if up.Path != "/infill" || b["input_prefix"] != "func a() {" || b["input_suffix"] != "}\n" {
		t.Errorf("suffix %s", up.Body)
	}
}

func TestKeepAliveDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{`"5m"`: 5 * time.Minute, `300`: 5 * time.Minute, `0`: 0, `-1`: -1, `"-1m"`: -1, `"10"`: 10 * time.Second, `1.5`: 1500 * time.Millisecond} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || d.Duration != want {
			t.Errorf("%s: %v %v", in, d.Duration, err)
		}
	}
	var d Duration
	if err := json.Unmarshal([]byte(`"soon"`), &d); err == nil {
		t.Error("a bad duration was accepted")
	}
}

// sse writes llama-server's stream chunks as the proxy would.
func sse(w http.ResponseWriter, chunks ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	for _, c := range chunks {
		// split mid-line to check the line assembly
		half := len(c) / 2
		w.Write([]byte("data: " + c[:half]))
		w.Write([]byte(c[half:] + "\n\n"))
	}
	w.Write([]byte("data: [DONE]\n\n"))
}

func lines(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		out = append(out, decode(t, []byte(l)))
	}
	return out
}

func TestChatStreamTranslation(t *testing.T) {
	rec := httptest.NewRecorder()
	w := NewWriter(rec, KindChat, "tiny:latest", true, time.Now().Add(-time.Second))
	w.Load = func() time.Duration { return 200 * time.Millisecond }
	w.Write([]byte(": loading model\n\n")) // the router's loading comment
	sse(w,
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"Hel"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"lo"}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get","arguments":"{\"ci"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Paris\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"timings":{"prompt_n":5,"prompt_ms":10,"predicted_n":3,"predicted_ms":30}}`,
		`{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}`)
	w.Finish()
	if ct := rec.Header().Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("content type %q", ct)
	}
	got := lines(t, rec.Body.String())
	if len(got) != 5 {
		t.Fatalf("%d objects: %s", len(got), rec.Body)
	}
	if m := got[0]["message"].(map[string]any); m["thinking"] != "hmm" || got[0]["done"] != false || got[0]["model"] != "tiny:latest" {
		t.Errorf("thinking %v", got[0])
	}
	if got[1]["message"].(map[string]any)["content"] != "Hel" || got[2]["message"].(map[string]any)["content"] != "lo" {
		t.Errorf("content %v %v", got[1], got[2])
	}
	calls := got[3]["message"].(map[string]any)["tool_calls"].([]any)
	fn := calls[0].(map[string]any)["function"].(map[string]any)
	if fn["name"] != "get" || fn["arguments"].(map[string]any)["city"] != "Paris" {
		t.Errorf("tool call %v", got[3])
	}
	last := got[4]
	if last["done"] != true || last["done_reason"] != "stop" || last["prompt_eval_count"] != 7.0 || last["eval_count"] != 3.0 ||
		last["eval_duration"] != 30e6 || last["prompt_eval_duration"] != 10e6 || last["load_duration"] != 200e6 || last["total_duration"].(float64) < 1e9 {
		t.Errorf("final %v", last)
	}
	if _, err := time.Parse(time.RFC3339Nano, last["created_at"].(string)); err != nil {
		t.Error(err)
	}
}

func TestNonStreamAndNativeTranslation(t *testing.T) {
	rec := httptest.NewRecorder()
	w := NewWriter(rec, KindChat, "m", false, time.Now())
	w.Header().Set("Content-Length", "999") // llama-server's, never the client's
	w.WriteHeader(200)
	w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"Hi","tool_calls":[{"function":{"name":"a","arguments":"{}"}},{"function":{"name":"b","arguments":"{\"k\":2}"}}]},"finish_reason":"length"}],"usage":{"prompt_tokens":4},"timings":{"predicted_n":2,"predicted_ms":5}}`))
	w.Finish()
	got := decode(t, rec.Body.Bytes())
	msg := got["message"].(map[string]any)
	calls := msg["tool_calls"].([]any)
	if msg["content"] != "Hi" || got["done"] != true || got["done_reason"] != "length" || len(calls) != 2 || rec.Header().Get("Content-Length") != "" {
		t.Errorf("%s", rec.Body)
	}
	if calls[1].(map[string]any)["function"].(map[string]any)["name"] != "b" {
		t.Errorf("calls %v", calls)
	}

	rec = httptest.NewRecorder()
	w = NewWriter(rec, KindGenerate, "m", true, time.Now())
	w.WriteHeader(200)
	w.Write([]byte("data: {\"content\":\"a\",\"stop\":false}\n\ndata: {\"content\":\"b\",\"stop\":false}\n\ndata: {\"content\":\"\",\"stop\":true,\"stop_type\":\"limit\",\"tokens_evaluated\":3,\"timings\":{\"predicted_n\":2}}\n\n"))
	w.Finish()
	gl := lines(t, rec.Body.String())
	if len(gl) != 3 || gl[0]["response"] != "a" || gl[1]["response"] != "b" || gl[2]["done_reason"] != "length" || gl[2]["prompt_eval_count"] != 3.0 {
		t.Errorf("native %s", rec.Body)
	}
}

func TestErrorTranslation(t *testing.T) {
	rec := httptest.NewRecorder()
	w := NewWriter(rec, KindChat, "nope", true, time.Now())
	w.Header().Set("Retry-After", "3")
	w.WriteHeader(503)
	w.Write([]byte(`{"error":{"message":"queue deadline passed","type":"server_error","code":"queue_timeout"}}`))
	w.Finish()
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "3" || decode(t, rec.Body.Bytes())["error"] != "queue deadline passed" {
		t.Errorf("%d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	rec = httptest.NewRecorder()
	w = NewWriter(rec, KindChat, "nope", true, time.Now())
	w.WriteHeader(404)
	w.Write([]byte(`{"error":{"message":"model \"nope\" not found","code":"model_not_found"}}`))
	w.Finish()
	if decode(t, rec.Body.Bytes())["error"] != `model "nope" not found, try pulling it first` {
		t.Errorf("%s", rec.Body)
	}
	// An error event in a stream whose headers went out early.
	rec = httptest.NewRecorder()
	w = NewWriter(rec, KindGenerate, "m", true, time.Now())
	w.WriteHeader(200)
	w.Write([]byte("data: {\"error\":{\"message\":\"load failed\"}}\n\n"))
	w.Finish()
	if got := lines(t, rec.Body.String()); len(got) != 1 || got[0]["error"] != "load failed" {
		t.Errorf("%s", rec.Body)
	}
}

func TestEmbedTranslation(t *testing.T) {
	rec := httptest.NewRecorder()
	w := NewWriter(rec, KindEmbed, "e", false, time.Now())
	w.WriteHeader(200)
	w.Write([]byte(`{"data":[{"index":1,"embedding":[0.3,0.4]},{"index":0,"embedding":[0.1,0.2]}],"usage":{"prompt_tokens":6}}`))
	w.Finish()
	got := decode(t, rec.Body.Bytes())
	vecs := got["embeddings"].([]any)
	if got["model"] != "e" || len(vecs) != 2 || vecs[0].([]any)[0] != 0.1 || got["prompt_eval_count"] != 6.0 {
		t.Errorf("%s", rec.Body)
	}
	rec = httptest.NewRecorder()
	w = NewWriter(rec, KindEmbeddings, "e", false, time.Now())
	w.WriteHeader(200)
	w.Write([]byte(`{"data":[{"index":0,"embedding":[0.5]}]}`))
	w.Finish()
	if got := decode(t, rec.Body.Bytes()); got["embedding"].([]any)[0] != 0.5 {
		t.Errorf("%s", rec.Body)
	}
	if ins, err := EmbedInputs(json.RawMessage(`["a","b"]`)); err != nil || len(ins) != 2 {
		t.Errorf("inputs %v %v", ins, err)
	}
	if _, err := EmbedInputs(json.RawMessage(`3`)); err == nil {
		t.Error("a number was accepted as input")
	}
}

func TestModelsShapes(t *testing.T) {
	now := time.Now()
	ms := []Model{{Name: ListedName("tiny"), Size: 10, Parameters: 494_030_000, Quantization: "Q8_0", Family: "llama", Modified: now.Add(-time.Hour)},
		{Name: ListedName("org/r:Q4_K_M"), Parameters: 8_030_000_000, Running: true, Memory: 5, VRAM: 3, Modified: now}}
	tags := Tags(ms)
	if tags.Models[0].Name != "org/r:Q4_K_M" || tags.Models[1].Name != "tiny:latest" || tags.Models[1].Details.ParameterSize != "494.03M" ||
		tags.Models[0].Details.ParameterSize != "8.0B" || tags.Models[1].Details.Format != "gguf" {
		t.Errorf("tags %+v", tags)
	}
	ps := PS(ms)
	if len(ps.Models) != 1 || ps.Models[0].SizeVRAM != 3 || ps.Models[0].ExpiresAt.Year() != 2318 {
		t.Errorf("ps %+v", ps)
	}
	if base, ok := Unlisted("tiny:latest"); !ok || base != "tiny" {
		t.Errorf("unlisted %q %v", base, ok)
	}
	if caps := (Model{Embedding: true}).Capabilities(); len(caps) != 1 || caps[0] != "embedding" {
		t.Errorf("caps %v", caps)
	}
	if paramSize(1_000_000_000) != "1B" || paramSize(3_210_000_000) != "3.2B" {
		t.Errorf("%s %s", paramSize(1_000_000_000), paramSize(3_210_000_000))
	}
}

// A stream cut before its last chunk ends with an error line, never with a complete-looking object.
func TestCutStream(t *testing.T) {
	rec := httptest.NewRecorder()
	w := NewWriter(rec, KindChat, "m", true, time.Now())
	w.WriteHeader(200)
	w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"par\"}}]}\n\n"))
	w.Write([]byte(`{"error":{"message":"upstream: connection reset","type":"server_error"}}`)) // the proxy's error after the headers
	w.Finish()
	got := lines(t, rec.Body.String())
	if len(got) != 2 || got[1]["error"] != "upstream: connection reset" || got[1]["done"] != nil {
		t.Errorf("%s", rec.Body)
	}
	rec = httptest.NewRecorder()
	w = NewWriter(rec, KindGenerate, "m", true, time.Now())
	w.WriteHeader(200)
	w.Write([]byte("data: {\"content\":\"a\",\"stop\":false}\n\n"))
	w.Finish()
	if got := lines(t, rec.Body.String()); len(got) != 2 || !strings.Contains(got[1]["error"].(string), "ended before") {
		t.Errorf("%s", rec.Body)
	}
}

func TestHubName(t *testing.T) {
	for in, want := range map[string]string{"hf.co/Org/Repo:Q4_K_M": "Org/Repo:Q4_K_M", "https://huggingface.co/Org/Repo": "Org/Repo",
		"Org/Repo:Q8_0": "Org/Repo:Q8_0", "hf.co/Org/Repo:latest": "Org/Repo", "HF.CO/Org/Repo:Q2_K": "Org/Repo:Q2_K"} {
		if got := HubName(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
