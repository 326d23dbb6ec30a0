package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/config"
)

// A model's request rules reach the real llama-server whatever API the request speaks: set_params
// n_predict = 3 and max_tokens = 3 (llama-server reads the one or the other by API; with
// ignore_eos, so a random-weight model cannot stop early) cap every answer at three tokens though
// each request asks for twenty, and set_params temperature shows in
// llama-server's own generation_settings. alpha has the rules, beta none and answers in full.
func TestRequestRulesReachTheChild(t *testing.T) {
	in := start(t, []string{"alpha", "beta"}, func(c *config.Config) {
		c.Models = map[string]config.Model{"alpha": {
			SetParams:     map[string]any{"n_predict": int64(3), "max_tokens": int64(3), "ignore_eos": true, "temperature": 0.125},
			StripParams:   []string{"logit_bias"},
			DefaultParams: map[string]any{"top_k": int64(7)},
		}}
	})
	post := func(path, body string) map[string]any {
		t.Helper()
		resp, err := http.Post(in.base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v in %s", path, err, b)
		}
		return m
	}
	num := func(m map[string]any, keys ...string) float64 {
		var v any = m
		for _, k := range keys {
			o, _ := v.(map[string]any)
			v = o[k]
		}
		f, _ := v.(float64)
		return f
	}
	msgs := `"messages":[{"role":"user","content":"Say something."}]`
	for _, model := range []string{"alpha", "beta"} {
		want := 3.0
		if model == "beta" {
			want = 20
		}
		// Greedy (temperature 0, which alpha's rule overrides): a random-weight model sampled at
		// random can write one of the chat template's stop strings, which ignore_eos does not
		// ignore, and end beta's answer early.
		openai := post("/v1/chat/completions", `{"model":"`+model+`","max_tokens":20,"ignore_eos":true,"temperature":0,"logit_bias":{"1":-100},`+msgs+`}`)
		if got := num(openai, "usage", "completion_tokens"); got != want {
			t.Errorf("OpenAI %s: completion_tokens %v, want %v: %v", model, got, want, openai)
		}
		anthropic := post("/v1/messages", `{"model":"`+model+`","max_tokens":20,"ignore_eos":true,"temperature":0,`+msgs+`}`)
		if got := num(anthropic, "usage", "output_tokens"); got != want {
			t.Errorf("Anthropic %s: output_tokens %v, want %v: %v", model, got, want, anthropic)
		}
		ollama := post("/api/chat", `{"model":"`+model+`","stream":false,"options":{"num_predict":20,"temperature":0.9},`+msgs+`}`)
		if model == "beta" {
			continue // Ollama's options carry no ignore_eos: beta may stop early
		}
		if got := num(ollama, "eval_count"); got != want {
			t.Errorf("Ollama %s: eval_count %v, want %v: %v", model, got, want, ollama)
		}
		native := post("/completion", `{"model":"`+model+`","prompt":"Once","n_predict":20,"temperature":0.9,"top_k":2}`)
		gs, _ := native["generation_settings"].(map[string]any)
		if got := num(native, "tokens_predicted"); got != want || gs["temperature"] != 0.125 || gs["top_k"] != 2.0 {
			t.Errorf("native %s: tokens_predicted %v, temperature %v, top_k %v; want %v, 0.125 (set), 2 (the request's, over the default)", model, got, gs["temperature"], gs["top_k"], want)
		}
		native = post("/completion", `{"model":"`+model+`","prompt":"Once"}`)
		if gs, _ := native["generation_settings"].(map[string]any); gs["top_k"] != 7.0 {
			t.Errorf("native %s without top_k: top_k %v, want the default 7", model, gs["top_k"])
		}
	}
}

// A default never beats the request's own value, under whichever name llama-server reads it by:
// default_params n_predict = 3 caps an answer whose request gives no cap, not one that asks for
// five tokens by max_tokens (OpenAI, Anthropic) or num_predict (Ollama).
func TestRequestRuleDefaultsYield(t *testing.T) {
	in := start(t, []string{"gamma"}, func(c *config.Config) {
		c.Models = map[string]config.Model{"gamma": {
			// Greedy, as in TestRequestRulesReachTheChild: a sampled answer of random weights can
			// write a chat-template stop string, which ignore_eos does not ignore (CI: Anthropic's
			// answer ended after 1 of 5 tokens).
			SetParams:     map[string]any{"ignore_eos": true, "temperature": 0.0},
			DefaultParams: map[string]any{"n_predict": int64(3)},
		}}
	})
	tokens := func(path, body string, keys ...string) float64 {
		t.Helper()
		resp, err := http.Post(in.base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v any
		if resp.StatusCode != 200 || json.Unmarshal(b, &v) != nil {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		for _, k := range keys {
			o, _ := v.(map[string]any)
			v = o[k]
		}
		f, _ := v.(float64)
		return f
	}
	msgs := `"messages":[{"role":"user","content":"Say something."}]`
	for _, tt := range []struct {
		name, path, body string
		keys             []string
		want             float64
	}{
		{"OpenAI, no cap", "/v1/chat/completions", `{"model":"gamma",` + msgs + `}`, []string{"usage", "completion_tokens"}, 3},
		{"OpenAI max_tokens", "/v1/chat/completions", `{"model":"gamma","max_tokens":5,` + msgs + `}`, []string{"usage", "completion_tokens"}, 5},
		{"Anthropic max_tokens", "/v1/messages", `{"model":"gamma","max_tokens":5,` + msgs + `}`, []string{"usage", "output_tokens"}, 5},
		{"Ollama, no cap", "/api/chat", `{"model":"gamma","stream":false,` + msgs + `}`, []string{"eval_count"}, 3},
		{"Ollama num_predict", "/api/chat", `{"model":"gamma","stream":false,"options":{"num_predict":5},` + msgs + `}`, []string{"eval_count"}, 5},
		{"native n_predict", "/completion", `{"model":"gamma","prompt":"Once","n_predict":5}`, []string{"tokens_predicted"}, 5},
	} {
		if got := tokens(tt.path, tt.body, tt.keys...); got != tt.want {
			t.Errorf("%s: %v tokens, want %v", tt.name, got, tt.want)
		}
	}
}
