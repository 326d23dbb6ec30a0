package httpapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/catalog"
)

// rulesRouter is testRouter with request rules for m1 (none for m2), both served by a recording
// upstream.
func rulesRouter(t *testing.T, rules *Rules) (string, chan seen) {
	t.Helper()
	up, seenCh := recordingUpstream(t)
	srv, fe, _ := testRouter(t, up.URL, func(o *Options) {
		o.Rules = RuleSet{"m1": rules}
		o.Catalog = fakeCatalog{"m1": {ID: "m1", Path: "/models/m1.gguf", Architecture: "llama", ChatTemplate: true},
			"m2": {ID: "m2", Path: "/models/m2.gguf", Architecture: "llama", ChatTemplate: true}}
	})
	fe.add("m2", up.URL)
	return srv.URL, seenCh
}

func received(t *testing.T, ch chan seen) seen {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream received nothing")
		return seen{}
	}
}

// Every API family's body reaches the child with the model's rules applied to its top-level
// fields, and every other byte as the client sent it.
func TestRulesPerFamily(t *testing.T) {
	rules := mustRules(t, map[string]any{"temperature": 0.2}, []string{"seed"}, map[string]any{"top_k": int64(40)})
	base, seenCh := rulesRouter(t, rules)
	msgs := `[{"role":"user","content":"h\u00e9 \"x\""}]`
	tests := []struct {
		family, path, body, upPath, want string
	}{
		{"OpenAI chat", "/v1/chat/completions", `{"model":"m1", "messages":` + msgs + `,"seed":7,"temperature":1.5}`,
			"/v1/chat/completions", `{"model":"m1", "messages":` + msgs + `,"temperature":0.2,"top_k":40}`},
		{"OpenAI completions", "/v1/completions", `{"model":"fast","prompt":"p","top_k":5}`,
			"/v1/completions", `{"model":"fast","prompt":"p","top_k":5,"temperature":0.2}`},
		{"OpenAI embeddings", "/v1/embeddings", `{"model":"m1","input":"p"}`,
			"/v1/embeddings", `{"model":"m1","input":"p","temperature":0.2,"top_k":40}`},
		{"OpenAI responses", "/v1/responses", `{"model":"m1","input":"p","seed":1}`,
			"/v1/responses", `{"model":"m1","input":"p","temperature":0.2,"top_k":40}`},
		{"Anthropic messages", "/v1/messages", "{\n \"model\": \"m1\",\n \"max_tokens\": 8,\n \"messages\": " + msgs + "\n}",
			"/v1/messages", "{\n \"model\": \"m1\",\n \"max_tokens\": 8,\n \"messages\": " + msgs + ",\"temperature\":0.2,\"top_k\":40\n}"},
		{"native completion", "/completion", `{"model":"m1","prompt":"p","top_k":null}`,
			"/completion", `{"model":"m1","prompt":"p","top_k":40,"temperature":0.2}`},
		{"native infill", "/infill", `{"model":"m1","input_prefix":"a","input_suffix":"b"}`,
			"/infill", `{"model":"m1","input_prefix":"a","input_suffix":"b","temperature":0.2,"top_k":40}`},
		{"through /upstream", "/upstream/m1/v1/chat/completions", `{"messages":[],"seed":3}`,
			"/v1/chat/completions", `{"messages":[],"temperature":0.2,"top_k":40}`},
	}
	for _, tt := range tests {
		t.Run(tt.family, func(t *testing.T) {
			if resp, b := postJSON(t, base+tt.path, tt.body); resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			s := received(t, seenCh)
			if s.Path != tt.upPath || string(s.Body) != tt.want {
				t.Errorf("upstream got %s %s\nwant %s %s", s.Path, s.Body, tt.upPath, tt.want)
			}
		})
	}

	// Not rules' business: a model without rules, a tokenize request, a GET.
	for _, tt := range []struct{ name, path, body string }{
		{"a model without rules", "/v1/chat/completions", "{ \"model\" : \"m2\" ,\"seed\":7,\n\t\"messages\":[ ] }"},
		{"tokenize", "/tokenize", `{"model":"m1","content":"x","seed":1}`},
	} {
		if resp, b := postJSON(t, base+tt.path, tt.body); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tt.name, resp.StatusCode, b)
		}
		if s := received(t, seenCh); string(s.Body) != tt.body {
			t.Errorf("%s: upstream got %q, want the body byte for byte %q", tt.name, s.Body, tt.body)
		}
	}
}

// Ollama's requests are translated first; the rules apply to the body that reaches llama-server,
// and an option the request gives counts as its value, which a default never replaces.
func TestRulesOllama(t *testing.T) {
	rules := mustRules(t, map[string]any{"n_predict": int64(3)}, []string{"seed"}, map[string]any{"temperature": 0.3})
	base, seenCh := rulesRouter(t, rules)
	body := func(path, req string) (string, map[string]any) {
		t.Helper()
		if resp, b := postJSON(t, base+path, req); resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", path, req, resp.StatusCode, b)
		}
		s := received(t, seenCh)
		var m map[string]any
		if err := json.Unmarshal(s.Body, &m); err != nil {
			t.Fatalf("%v: %s", err, s.Body)
		}
		return s.Path, m
	}
	for _, tt := range []struct {
		path, req, upPath string
		temperature       float64
	}{
		{"/api/chat", `{"model":"m1","stream":false,"messages":[{"role":"user","content":"hi"}],"options":{"temperature":0.9,"num_predict":50,"seed":4}}`, "/v1/chat/completions", 0.9},
		{"/api/chat", `{"model":"m1","stream":false,"messages":[{"role":"user","content":"hi"}]}`, "/v1/chat/completions", 0.3},
		{"/api/generate", `{"model":"m1","stream":false,"prompt":"hi","options":{"temperature":0,"seed":4}}`, "/v1/chat/completions", 0},
		{"/api/generate", `{"model":"m1","stream":false,"prompt":"hi","raw":true}`, "/completion", 0.3},
		{"/api/generate", `{"model":"m1","stream":false,"prompt":"def f(","suffix":")"}`, "/infill", 0.3},
	} {
		path, m := body(tt.path, tt.req)
		if path != tt.upPath || m["n_predict"] != 3.0 || m["temperature"] != tt.temperature || m["seed"] != nil {
			t.Errorf("%s %s: llama-server got %s %v; want %s, n_predict 3, temperature %v, no seed", tt.path, tt.req, path, m, tt.upPath, tt.temperature)
		}
	}
	if path, m := body("/api/embed", `{"model":"m1","input":"hi"}`); path != "/v1/embeddings" || m["n_predict"] != 3.0 {
		t.Errorf("/api/embed: llama-server got %s %v", path, m)
	}
}

// A body the rules cannot splice gets the 400 any malformed body gets; the same body for a model
// without rules is proxied as it is.
func TestRulesBadBodyIs400(t *testing.T) {
	base, seenCh := rulesRouter(t, mustRules(t, map[string]any{"temperature": 0.2}, nil, nil))
	wantResp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(`not json`))
	if err != nil {
		t.Fatal(err)
	}
	wantTyp, wantCode, _ := decodeError(t, wantResp)
	if wantResp.StatusCode != 400 {
		t.Fatalf("malformed JSON: %d, want 400", wantResp.StatusCode)
	}
	for _, tt := range []struct{ path, body string }{
		{"/upstream/m1/completion", `not json`},
		{"/upstream/m1/v1/chat/completions", `[{"model":"m1"}]`},
		{"/v1/chat/completions?model=m1", ``},
	} {
		resp, b := postJSON(t, base+tt.path, tt.body)
		var e struct {
			Error struct{ Type, Code, Message string }
		}
		_ = json.Unmarshal(b, &e)
		if resp.StatusCode != 400 || e.Error.Type != wantTyp || e.Error.Code != wantCode || !strings.Contains(e.Error.Message, "request rules") {
			t.Errorf("%s %q: %d %s; want 400 %s/%s naming the rules", tt.path, tt.body, resp.StatusCode, b, wantTyp, wantCode)
		}
	}
	if resp, b := postJSON(t, base+"/upstream/m2/completion", `not json`); resp.StatusCode != 200 {
		t.Errorf("a model without rules: %d %s", resp.StatusCode, b)
	} else if s := received(t, seenCh); string(s.Body) != `not json` {
		t.Errorf("upstream got %q", s.Body)
	}
}

// A stream still streams when its body was changed: the rule (max_tokens 3) reaches the fake
// llama-server, which stops after three tokens, each arriving as it is made.
func TestRulesStream(t *testing.T) {
	fake, _ := startFakeLlama(t, "", "FAKE_LLAMA_TOKENS=12", "FAKE_LLAMA_TOKEN_DELAY=200ms")
	srv, _, _ := testRouter(t, fake, func(o *Options) {
		o.Rules = RuleSet{"m1": mustRules(t, map[string]any{"max_tokens": int64(3)}, nil, nil)}
	})
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m1","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	start := time.Now()
	var tokens int
	var firstAt time.Duration
	finish := ""
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data: ")
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var ev struct {
			Choices []struct {
				Delta        struct{ Content string }
				FinishReason *string `json:"finish_reason"`
			}
		}
		if json.Unmarshal([]byte(line), &ev) != nil || len(ev.Choices) == 0 {
			continue
		}
		if ev.Choices[0].Delta.Content != "" {
			if tokens == 0 {
				firstAt = time.Since(start)
			}
			tokens++
		}
		if ev.Choices[0].FinishReason != nil {
			finish = *ev.Choices[0].FinishReason
		}
	}
	total := time.Since(start)
	if tokens != 3 || finish != "length" {
		t.Errorf("stream: %d tokens, finish %q; want 3 and length (max_tokens forced to 3)", tokens, finish)
	}
	// Streamed, the first token comes about 400ms before the end; buffered, with it. The bound leaves
	// 300ms for a loaded machine to be late reading the first token.
	if total-firstAt < 100*time.Millisecond {
		t.Errorf("the first token came %v in, the end %v: the stream was buffered", firstAt, total)
	}
}

// A model from Ollama's store has its Modelfile's parameters; the configuration's default_params
// come before them, and the request's own options before both.
func TestRulesOverOllamaModelfile(t *testing.T) {
	up, seenCh := recordingUpstream(t)
	srv, _, _ := testRouter(t, up.URL, func(o *Options) {
		o.Rules = RuleSet{"m1": mustRules(t, nil, nil, map[string]any{"temperature": 0.3, "n_predict": int64(64)})}
		o.Catalog = fakeCatalog{"m1": {ID: "m1", Path: "/store/blobs/sha256-" + strings.Repeat("a", 64), Architecture: "llama", ChatTemplate: true,
			Ollama:   []catalog.OllamaName{{Name: "m1:latest", Defaults: map[string]any{"temperature": 0.7, "num_predict": 10.0, "top_k": 20.0}}},
			Defaults: map[string]any{"temperature": 0.7, "num_predict": 10.0, "top_k": 20.0}}}
	})
	for _, tt := range []struct {
		options string
		want    map[string]any // nil: absent
	}{
		{`{}`, map[string]any{"temperature": 0.3, "n_predict": 64.0, "max_tokens": nil, "top_k": 20.0}},
		// Chat's num_predict is max_tokens, which gives n_predict too: the default is not added.
		{`{"temperature": 0.9, "num_predict": 5}`, map[string]any{"temperature": 0.9, "max_tokens": 5.0, "n_predict": nil, "top_k": 20.0}},
	} {
		if resp, b := postJSON(t, srv.URL+"/api/chat", `{"model":"m1","stream":false,"messages":[{"role":"user","content":"hi"}],"options":`+tt.options+`}`); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		var got map[string]any
		s := received(t, seenCh)
		if err := json.Unmarshal(s.Body, &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("options %s: %s = %v, want %v (body %s)", tt.options, k, got[k], v, s.Body)
			}
		}
	}
}
