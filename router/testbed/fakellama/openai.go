package main

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// OpenAI-compatible endpoints: /v1/chat/completions, /v1/completions,
// /v1/embeddings and a minimal /v1/responses.

func (s *server) handleChat(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSON(w, r)
	if !ok {
		return
	}
	messages, ok := body["messages"].([]any)
	if !ok || len(messages) == 0 {
		writeError(w, 400, "'messages' is required and must be a non-empty array")
		return
	}
	stream, _ := body["stream"].(bool)
	includeUsage := false
	if so, ok := body["stream_options"].(map[string]any); ok {
		includeUsage, _ = so["include_usage"].(bool)
	}
	n, finish := s.predictCount(body, "max_completion_tokens", "max_tokens", "n_predict")
	model := s.responseModel(body)
	id, created := randomID("chatcmpl-"), time.Now().Unix()
	base := func(object string) map[string]any {
		return map[string]any{"id": id, "object": object, "created": created, "model": model,
			"system_fingerprint": fingerprint()}
	}
	ev, ctx := s.open(w, r, stream)
	defer ev.close()
	t := s.startTask(ctx, r, body, stream, chatML("", messages))
	usage := func(produced int) map[string]any {
		return map[string]any{"prompt_tokens": t.prompt, "completion_tokens": produced, "total_tokens": t.prompt + produced}
	}

	if !stream {
		var text strings.Builder
		produced, ok := s.runTask(t, n, func(_ int, p string) error { text.WriteString(p); return nil })
		if !ok {
			return
		}
		res := base("chat.completion")
		res["choices"] = []any{map[string]any{"index": 0, "finish_reason": finish,
			"message": map[string]any{"role": "assistant", "content": text.String()}}}
		res["usage"] = usage(produced)
		res["timings"] = timings(t, produced)
		writeJSON(w, 200, res)
		return
	}

	chunk := func(delta map[string]any, finish any) map[string]any {
		c := base("chat.completion.chunk")
		c["choices"] = []any{map[string]any{"index": 0, "finish_reason": finish, "delta": delta}}
		return c
	}
	if !s.kn.DropOpening && ev.data(chunk(map[string]any{"role": "assistant", "content": nil}, nil)) != nil {
		s.endTask(t, 0, true)
		return
	}
	produced, ok := s.runTask(t, n, func(_ int, p string) error {
		return ev.data(chunk(map[string]any{"content": p}, nil))
	})
	if !ok {
		return
	}
	last := chunk(map[string]any{}, finish)
	last["timings"] = timings(t, produced)
	ev.data(last)
	if includeUsage {
		u := base("chat.completion.chunk")
		u["choices"] = []any{}
		u["usage"] = usage(produced)
		ev.data(u)
	}
	ev.done()
}

func (s *server) handleCompletionOAI(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSON(w, r)
	if !ok {
		return
	}
	prompts := inputs(body["prompt"])
	if len(prompts) == 0 {
		writeError(w, 400, "\"prompt\" must be provided")
		return
	}
	stream, _ := body["stream"].(bool)
	n, finish := s.predictCount(body, "max_tokens", "n_predict")
	model := s.responseModel(body)
	id, created := randomID("cmpl-"), time.Now().Unix()
	base := func() map[string]any {
		return map[string]any{"id": id, "object": "text_completion", "created": created, "model": model,
			"system_fingerprint": fingerprint()}
	}
	ev, ctx := s.open(w, r, stream)
	defer ev.close()
	t := s.startTask(ctx, r, body, stream, strings.Join(prompts, ""))
	if !stream {
		var text strings.Builder
		produced, ok := s.runTask(t, n, func(_ int, p string) error { text.WriteString(p); return nil })
		if !ok {
			return
		}
		res := base()
		res["choices"] = []any{map[string]any{"index": 0, "text": text.String(), "logprobs": nil, "finish_reason": finish}}
		res["usage"] = map[string]any{"prompt_tokens": t.prompt, "completion_tokens": produced, "total_tokens": t.prompt + produced}
		res["timings"] = timings(t, produced)
		writeJSON(w, 200, res)
		return
	}
	chunk := func(text string, finish any) map[string]any {
		c := base()
		c["choices"] = []any{map[string]any{"index": 0, "text": text, "logprobs": nil, "finish_reason": finish}}
		return c
	}
	produced, ok := s.runTask(t, n, func(_ int, p string) error { return ev.data(chunk(p, nil)) })
	if !ok {
		return
	}
	last := chunk("", finish)
	last["timings"] = timings(t, produced)
	ev.data(last)
	ev.done()
}

func (s *server) handleEmbeddingsOAI(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSON(w, r)
	if !ok {
		return
	}
	texts := inputs(body["input"])
	if len(texts) == 0 {
		writeError(w, 400, "\"input\" must be provided")
		return
	}
	t := s.startTask(r.Context(), r, body, false, strings.Join(texts, ""))
	s.endTask(t, 0, false)
	data := make([]any, len(texts))
	for i, text := range texts {
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": embed(text)}
	}
	writeJSON(w, 200, map[string]any{
		"object": "list", "model": s.responseModel(body), "data": data,
		"usage": map[string]any{"prompt_tokens": t.prompt, "total_tokens": t.prompt},
	})
}

func (s *server) handleResponses(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSON(w, r)
	if !ok {
		return
	}
	var prompt string
	switch in := body["input"].(type) {
	case string:
		prompt = chatML("", []any{map[string]any{"role": "user", "content": in}})
	case []any:
		prompt = chatML("", in)
	default:
		writeError(w, 400, "\"input\" must be a string or an array of messages")
		return
	}
	if instr, ok := body["instructions"].(string); ok {
		prompt = "<|im_start|>system\n" + instr + "<|im_end|>\n" + prompt
	}
	stream, _ := body["stream"].(bool)
	n, _ := s.predictCount(body, "max_output_tokens")
	id, msgID, created := randomID("resp_"), randomID("msg_"), time.Now().Unix()
	response := func(status, text string, produced int, t *task) map[string]any {
		output := []any{}
		if status == "completed" {
			output = []any{map[string]any{"type": "message", "id": msgID, "status": "completed", "role": "assistant",
				"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}}
		}
		return map[string]any{"id": id, "object": "response", "created_at": created, "status": status,
			"model": s.responseModel(body), "output": output,
			"usage": map[string]any{"input_tokens": t.prompt, "output_tokens": produced, "total_tokens": t.prompt + produced}}
	}
	ev, ctx := s.open(w, r, stream)
	defer ev.close()
	t := s.startTask(ctx, r, body, stream, prompt)
	var text strings.Builder
	if !stream {
		produced, ok := s.runTask(t, n, func(_ int, p string) error { text.WriteString(p); return nil })
		if ok {
			writeJSON(w, 200, response("completed", text.String(), produced, t))
		}
		return
	}
	if ev.event("response.created", map[string]any{"type": "response.created", "response": response("in_progress", "", 0, t)}) != nil {
		s.endTask(t, 0, true)
		return
	}
	produced, ok := s.runTask(t, n, func(_ int, p string) error {
		text.WriteString(p)
		return ev.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta",
			"item_id": msgID, "output_index": 0, "content_index": 0, "delta": p})
	})
	if ok {
		ev.event("response.completed", map[string]any{"type": "response.completed", "response": response("completed", text.String(), produced, t)})
	}
}

// fingerprint is the system_fingerprint llama-server reports.
func fingerprint() string { return fmt.Sprintf("b%d-%s", buildNumber, buildCommit) }
