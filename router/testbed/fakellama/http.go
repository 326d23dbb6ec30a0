package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// routes builds the HTTP handler: llama-server's endpoints plus /fake/* hooks.
func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.HandleFunc("GET /v1/health", s.handleHealth)
	mux.HandleFunc("GET /models", s.handleModels)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /props", s.handleProps)
	mux.HandleFunc("GET /slots", s.handleSlots)
	mux.HandleFunc("GET /metrics", s.handleMetrics)

	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("POST /chat/completions", s.handleChat)
	mux.HandleFunc("POST /v1/completions", s.handleCompletionOAI)
	mux.HandleFunc("POST /completion", s.handleCompletionNative)
	mux.HandleFunc("POST /completions", s.handleCompletionNative)
	mux.HandleFunc("POST /infill", s.handleCompletionNative)
	mux.HandleFunc("POST /v1/embeddings", s.handleEmbeddingsOAI)
	mux.HandleFunc("POST /embedding", s.handleEmbeddingsNative)
	mux.HandleFunc("POST /embeddings", s.handleEmbeddingsNative)
	mux.HandleFunc("POST /tokenize", s.handleTokenize)
	mux.HandleFunc("POST /detokenize", s.handleDetokenize)
	mux.HandleFunc("POST /apply-template", s.handleApplyTemplate)
	mux.HandleFunc("POST /v1/messages", s.handleMessages)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.handleCountTokens)
	mux.HandleFunc("POST /v1/responses", s.handleResponses)
	mux.HandleFunc("POST /responses", s.handleResponses)
	for _, p := range []string{"/rerank", "/reranking", "/v1/rerank", "/v1/reranking"} {
		mux.HandleFunc("POST "+p, s.handleRerank)
	}

	mux.HandleFunc("POST /fake/crash", s.handleFakeCrash)
	mux.HandleFunc("POST /fake/hold", s.handleFakeHold)
	mux.HandleFunc("GET /fake/stats", s.handleFakeStats)
	return s.middleware(notFound(mux))
}

// notFound answers requests no route matches, including a known path with
// the wrong method, with 404 and a closed connection, as llama-server does.
func notFound(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			w.Header().Set("Connection", "close")
			http.Error(w, "File Not Found", http.StatusNotFound)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// middleware echoes X-Request-Id, sends llama-server's CORS headers (any
// Origin echoed, an empty one when the request has none; preflights answered
// for every path), answers 503 while loading (except the model list, as
// llama-server does) and logs each request.
func (s *server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("X-Request-Id"); id != "" {
			w.Header().Set("X-Request-Id", id)
		}
		w.Header()["Access-Control-Allow-Origin"] = []string{r.Header.Get("Origin")}
		if r.Method == http.MethodOptions {
			h := w.Header()
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "*")
			h.Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusOK)
			return
		}
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		path := r.URL.Path
		switch {
		case strings.HasPrefix(path, "/fake/"), path == "/models", path == "/v1/models":
			next.ServeHTTP(sw, r)
		case s.isLoading():
			writeError(sw, http.StatusServiceUnavailable, "Loading model")
		default:
			next.ServeHTTP(sw, r)
		}
		if path != "/health" && path != "/v1/health" && !strings.HasPrefix(path, "/fake/") {
			srvLog(lvlInfo, "log_server_r", "done request: %s %s %s %d", r.Method, path, hostOf(r.RemoteAddr), sw.status)
		}
	})
}

// statusWriter remembers the status code for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the real writer (for Flush).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func hostOf(addr string) string {
	if i := strings.LastIndex(addr, ":"); i > 0 {
		return addr[:i]
	}
	return addr
}

// errorTypes maps status codes to llama-server's error types.
var errorTypes = map[int]string{
	400: "invalid_request_error",
	401: "authentication_error",
	404: "not_found_error",
	500: "server_error",
	501: "not_supported_error",
	503: "unavailable_error",
}

// writeError answers in llama-server's error shape:
// {"error":{"message":"...","type":"...","code":N}}.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, obj{{"error", obj{{"message", msg}, {"type", errorTypes[code]}, {"code", code}}}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := marshal(v)
	if err != nil {
		code, b = 500, []byte(`{"error":{"message":"encode response","type":"server_error","code":500}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	w.Write(b)
}

// readJSON decodes a request body into a JSON object. Like llama-server,
// whose JSON parse exceptions are not "invalid argument" errors, a body that
// is not a JSON object gets 500 server_error; on failure readJSON has
// already answered and returns false.
func readJSON(w http.ResponseWriter, r *http.Request) (map[string]any, bool) {
	data, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeError(w, 500, fmt.Sprintf("cannot read request body: %v", err))
		return nil, false
	}
	if len(bytes.TrimSpace(data)) == 0 {
		writeError(w, 500, "[json.exception.parse_error.101] parse error at line 1, column 1: attempting to parse an empty input; check that your input string or stream contains the expected JSON")
		return nil, false
	}
	var body map[string]any
	if err := json.Unmarshal(data, &body); err != nil {
		writeError(w, 500, fmt.Sprintf("[json.exception.parse_error.101] parse error: %v", err))
		return nil, false
	}
	if body == nil {
		writeError(w, 500, "[json.exception.type_error.302] type must be object, but is null")
		return nil, false
	}
	return body, true
}

func (s *server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{"status": "ok"})
}

// modelInfo is the model's /v1/models entry, also the payload of the first
// "ready" state line; keys in llama-server's order.
func (s *server) modelInfo() obj {
	inputs := []string{"text"}
	if s.opts.mmproj != "" {
		inputs = append(inputs, "image")
	}
	return obj{
		{"id", s.modelID},
		{"aliases", s.aliases},
		{"tags", []string{}},
		{"object", "model"},
		{"architecture", obj{{"input_modalities", inputs}, {"output_modalities", []string{"text"}}}},
		{"created", time.Now().Unix()},
		{"owned_by", "llamacpp"},
		{"meta", obj{
			{"vocab_type", 1}, {"n_vocab", 32000}, {"n_ctx", s.nCtx()}, {"n_ctx_train", 4096},
			{"n_embd", embedDim}, {"n_params", 1000000}, {"size", s.modelSize()}, {"ftype", "Q8_0"},
		}},
	}
}

func (s *server) handleModels(w http.ResponseWriter, r *http.Request) {
	caps := []string{"completion"}
	if s.opts.mmproj != "" {
		caps = append(caps, "multimodal")
	}
	writeJSON(w, 200, map[string]any{
		"models": []any{map[string]any{
			"name": s.modelID, "model": s.modelID, "modified_at": "", "size": "", "digest": "",
			"type": "model", "description": "", "tags": []string{""}, "capabilities": caps,
			"parameters": "", "details": map[string]any{"format": "gguf"},
		}},
		"object": "list",
		"data":   []any{s.modelInfo()},
	})
}

// slotJSON describes one slot for /slots and /props.
func (s *server) slotJSON(id int, processing bool) map[string]any {
	return map[string]any{
		"id": id, "id_task": -1, "n_ctx": s.nCtx() / s.nSlots(), "speculative": false,
		"is_processing": processing,
		"params": map[string]any{
			"n_predict": -1, "temperature": 0.8, "top_k": 40, "top_p": 0.95, "seed": -1,
			"stream": true, "max_tokens": -1,
		},
		"next_token": map[string]any{"has_next_token": true, "n_remain": -1, "n_decoded": 0},
	}
}

func (s *server) handleProps(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{
		"default_generation_settings": s.slotJSON(0, false),
		"total_slots":                 s.nSlots(),
		"model_alias":                 s.modelID,
		"model_path":                  s.opts.model,
		"modalities":                  map[string]any{"vision": s.opts.mmproj != "", "audio": false},
		"chat_template":               "{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n",
		"bos_token":                   "<s>",
		"eos_token":                   "</s>",
		"build_info":                  fingerprint(),
		"is_sleeping":                 s.isSleeping(),
	})
}

func (s *server) handleSlots(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	busy := s.inFlight
	s.mu.Unlock()
	slots := make([]any, s.nSlots())
	for i := range slots {
		slots[i] = s.slotJSON(i, i < busy)
	}
	writeJSON(w, 200, slots)
}

func (s *server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	prompt, predicted, busy, done := s.promptN, s.predictedN, s.inFlight, s.completed
	s.mu.Unlock()
	var b strings.Builder
	metric := func(name, kind, help string, v any) {
		fmt.Fprintf(&b, "# HELP llamacpp:%s %s\n# TYPE llamacpp:%s %s\nllamacpp:%s %v\n", name, help, name, kind, name, v)
	}
	metric("prompt_tokens_total", "counter", "Number of prompt tokens processed.", prompt)
	metric("tokens_predicted_total", "counter", "Number of generation tokens processed.", predicted)
	metric("n_decode_total", "counter", "Total number of llama_decode() calls", predicted)
	metric("requests_completed_total", "counter", "Number of task requests finished.", done)
	metric("requests_processing", "gauge", "Number of requests processing.", busy)
	metric("requests_deferred", "gauge", "Number of requests deferred.", 0)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	io.WriteString(w, b.String())
}

func (s *server) handleFakeCrash(w http.ResponseWriter, r *http.Request) {
	s.crash("POST /fake/crash")
}

func (s *server) handleFakeHold(w http.ResponseWriter, r *http.Request) {
	mb, err := strconv.Atoi(r.URL.Query().Get("mb"))
	if err != nil || mb < 0 {
		writeError(w, 400, "mb must be a whole number of MiB >= 0")
		return
	}
	s.setHold(mb)
	writeJSON(w, 200, map[string]any{"hold_mb": mb, "held_mb": s.heldMB()})
}

func (s *server) handleFakeStats(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	state := map[phase]string{phaseLoading: "loading", phaseReady: "ready", phaseSleeping: "sleeping"}[s.phase]
	stats := map[string]any{
		"requests": s.begun, "completed": s.completed, "in_flight": s.inFlight, "cancels": s.cancels,
		"sleeping": s.phase == phaseSleeping, "state": state, "hold_mb": s.holdMB, "held_mb": len(s.held),
	}
	s.mu.Unlock()
	writeJSON(w, 200, stats)
}
