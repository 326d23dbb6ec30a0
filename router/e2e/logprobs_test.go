package e2e

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
)

// Ollama's own Go client, unchanged, asks for logprobs and top_logprobs on chat and generate,
// streamed and not, and reads them from a real llama-server's answers: each generated token with its
// log probability and bytes, and as many alternatives as asked.
func TestOllamaLogprobs(t *testing.T) {
	in := start(t, []string{ocModel}, nil)
	u, err := url.Parse(in.base)
	if err != nil {
		t.Fatal(err)
	}
	c := api.NewClient(u, http.DefaultClient)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := map[string]any{"num_predict": 4, "seed": 1, "temperature": 0}
	check := func(what string, probs []api.Logprob, top int) {
		t.Helper()
		if len(probs) == 0 {
			t.Fatalf("%s: no logprobs", what)
		}
		for _, p := range probs {
			if p.Logprob > 0 || len(p.Bytes) == 0 && p.Token != "" || len(p.TopLogprobs) != top {
				t.Errorf("%s: %+v", what, p)
			}
		}
	}
	for _, stream := range []bool{false, true} {
		var chat, gen []api.Logprob
		err := c.Chat(ctx, &api.ChatRequest{Model: ocModel, Messages: []api.Message{{Role: "user", Content: "Hi"}}, Stream: &stream,
			Options: opts, Logprobs: true, TopLogprobs: 2}, func(r api.ChatResponse) error {
			chat = append(chat, r.Logprobs...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		check("chat", chat, 2)
		err = c.Generate(ctx, &api.GenerateRequest{Model: ocModel, Prompt: "Hi", Raw: true, Stream: &stream,
			Options: opts, Logprobs: true}, func(r api.GenerateResponse) error {
			gen = append(gen, r.Logprobs...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		check("raw generate", gen, 0)
	}
}
