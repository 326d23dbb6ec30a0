package main

import (
	"net/http"
	"sort"
	"strings"
)

// llama.cpp's own endpoints (/completion, /infill, /embedding, /tokenize,
// /detokenize, /apply-template, /rerank) and the Anthropic Messages API.

func (s *server) handleCompletionNative(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSON(w, r)
	if !ok {
		return
	}
	prompt := strings.Join(inputs(body["prompt"]), "")
	if r.URL.Path == "/infill" {
		prefix, _ := body["input_prefix"].(string)
		suffix, _ := body["input_suffix"].(string)
		prompt = "<|fim_prefix|>" + prefix + "<|fim_suffix|>" + suffix + "<|fim_middle|>" + prompt
	} else if _, present := body["prompt"]; !present {
		writeError(w, 400, "\"prompt\" must be provided")
		return
	}
	stream, _ := body["stream"].(bool)
	n, finish := s.predictCount(body, "n_predict", "max_tokens")
	stopType := map[string]string{"stop": "eos", "length": "limit"}[finish]
	ev, ctx := s.open(w, r, stream)
	defer ev.close()
	t := s.startTask(ctx, r, body, stream, prompt)
	final := func(content string, produced int) map[string]any {
		return map[string]any{
			"index": 0, "content": content, "tokens": []int{}, "id_slot": t.slot, "stop": true,
			"model": s.responseModel(body), "tokens_predicted": produced, "tokens_evaluated": t.prompt,
			"generation_settings": s.slotJSON(t.slot, false)["params"], "prompt": prompt,
			"has_new_line": false, "truncated": false, "stop_type": stopType, "stopping_word": "",
			"tokens_cached": t.prompt + produced, "timings": timings(t, produced),
		}
	}
	if !stream {
		var text strings.Builder
		produced, ok := s.runTask(t, n, func(_ int, p string) error { text.WriteString(p); return nil })
		if ok {
			writeJSON(w, 200, final(text.String(), produced))
		}
		return
	}
	produced, ok := s.runTask(t, n, func(i int, p string) error {
		return ev.data(map[string]any{"index": 0, "content": p, "tokens": []int{}, "stop": false,
			"id_slot": -1, "tokens_predicted": i + 1, "tokens_evaluated": t.prompt})
	})
	if ok {
		ev.data(final("", produced)) // the native stream has no [DONE]
	}
}

func (s *server) handleEmbeddingsNative(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSON(w, r)
	if !ok {
		return
	}
	texts := inputs(body["content"])
	if len(texts) == 0 {
		texts = inputs(body["input"])
	}
	if len(texts) == 0 {
		writeError(w, 400, "\"content\" must be provided")
		return
	}
	t := s.startTask(r.Context(), r, body, false, strings.Join(texts, ""))
	s.endTask(t, 0, false)
	out := make([]any, len(texts))
	for i, text := range texts {
		out[i] = map[string]any{"index": i, "embedding": [][]float64{embed(text)}}
	}
	writeJSON(w, 200, out)
}

func (s *server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSON(w, r)
	if !ok {
		return
	}
	content, ok := body["content"].(string)
	if !ok {
		writeError(w, 400, "\"content\" must be a string")
		return
	}
	s.endTask(s.startTask(r.Context(), r, body, false, ""), 0, false)
	ids := tokenize(content)
	if pieces, _ := body["with_pieces"].(bool); pieces {
		out := make([]any, len(ids))
		for i, id := range ids {
			text, _ := detokenize([]int{id})
			out[i] = map[string]any{"id": id, "piece": text}
		}
		writeJSON(w, 200, map[string]any{"tokens": out})
		return
	}
	writeJSON(w, 200, map[string]any{"tokens": ids})
}

func (s *server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSON(w, r)
	if !ok {
		return
	}
	raw, _ := body["tokens"].([]any)
	ids := make([]int, 0, len(raw))
	for _, v := range raw {
		f, ok := v.(float64)
		if !ok {
			writeError(w, 400, "\"tokens\" must be an array of token ids")
			return
		}
		ids = append(ids, int(f))
	}
	text, err := detokenize(ids)
	if err != nil {
		writeError(w, 400, err.Error())
		return
	}
	s.endTask(s.startTask(r.Context(), r, body, false, ""), 0, false)
	writeJSON(w, 200, map[string]any{"content": text})
}

func (s *server) handleApplyTemplate(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSON(w, r)
	if !ok {
		return
	}
	messages, ok := body["messages"].([]any)
	if !ok {
		writeError(w, 400, "'messages' is required and must be an array")
		return
	}
	s.endTask(s.startTask(r.Context(), r, body, false, ""), 0, false)
	writeJSON(w, 200, map[string]any{"prompt": chatML("", messages)})
}

func (s *server) handleRerank(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSON(w, r)
	if !ok {
		return
	}
	query, _ := body["query"].(string)
	docs := inputs(body["documents"])
	if docs == nil {
		docs = inputs(body["texts"])
	}
	if query == "" || len(docs) == 0 {
		writeError(w, 400, "\"query\" and \"documents\" must be provided")
		return
	}
	t := s.startTask(r.Context(), r, body, false, query+strings.Join(docs, ""))
	s.endTask(t, 0, false)
	qwords := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(query)) {
		qwords[w] = true
	}
	results := make([]map[string]any, len(docs))
	for i, d := range docs {
		hits, total := 0, 0
		for _, w := range strings.Fields(strings.ToLower(d)) {
			total++
			if qwords[w] {
				hits++
			}
		}
		score := 0.0
		if total > 0 {
			score = float64(hits) / float64(total)
		}
		results[i] = map[string]any{"index": i, "relevance_score": score}
	}
	sort.SliceStable(results, func(a, b int) bool {
		return results[a]["relevance_score"].(float64) > results[b]["relevance_score"].(float64)
	})
	if top, ok := body["top_n"].(float64); ok && int(top) > 0 && int(top) < len(results) {
		results = results[:int(top)]
	}
	writeJSON(w, 200, map[string]any{"model": s.responseModel(body), "object": "list", "results": results,
		"usage": map[string]any{"prompt_tokens": t.prompt, "total_tokens": t.prompt}})
}

// anthropicPrompt renders an Anthropic request's system and messages.
func anthropicPrompt(w http.ResponseWriter, body map[string]any) (string, bool) {
	messages, ok := body["messages"].([]any)
	if !ok || len(messages) == 0 {
		writeError(w, 400, "'messages' is required and must be a non-empty array")
		return "", false
	}
	return chatML(textOf(body["system"]), messages), true
}

func (s *server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSON(w, r)
	if !ok {
		return
	}
	prompt, ok := anthropicPrompt(w, body)
	if !ok {
		return
	}
	t := s.startTask(r.Context(), r, body, false, prompt)
	s.endTask(t, 0, false)
	writeJSON(w, 200, map[string]any{"input_tokens": t.prompt})
}

func (s *server) handleMessages(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSON(w, r)
	if !ok {
		return
	}
	prompt, ok := anthropicPrompt(w, body)
	if !ok {
		return
	}
	stream, _ := body["stream"].(bool)
	n, finish := s.predictCount(body, "max_tokens")
	stopReason := map[string]string{"stop": "end_turn", "length": "max_tokens"}[finish]
	id := randomID("msg_")
	message := func(content []any, stop any, in, out int) map[string]any {
		return map[string]any{"id": id, "type": "message", "role": "assistant", "model": s.responseModel(body),
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": out}}
	}
	ev, ctx := s.open(w, r, stream)
	defer ev.close()
	t := s.startTask(ctx, r, body, stream, prompt)
	if !stream {
		var text strings.Builder
		produced, ok := s.runTask(t, n, func(_ int, p string) error { text.WriteString(p); return nil })
		if ok {
			writeJSON(w, 200, message([]any{map[string]any{"type": "text", "text": text.String()}}, stopReason, t.prompt, produced))
		}
		return
	}
	var err error
	if !s.kn.DropOpening {
		err = ev.event("message_start", map[string]any{"type": "message_start", "message": message([]any{}, nil, t.prompt, 0)})
	}
	if err == nil {
		err = ev.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
	}
	if err != nil {
		s.endTask(t, 0, true)
		return
	}
	produced, ok := s.runTask(t, n, func(_ int, p string) error {
		return ev.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": p}})
	})
	if !ok {
		return
	}
	ev.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stopReason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": produced}})
	ev.event("message_stop", map[string]any{"type": "message_stop"})
}
