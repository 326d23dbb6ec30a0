package ollama

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
)

// Kind is the Ollama endpoint an answer is for.
type Kind int

const (
	KindChat       Kind = iota // /api/chat: message objects
	KindGenerate               // /api/generate: response objects
	KindEmbed                  // /api/embed: embeddings of every input
	KindEmbeddings             // /api/embeddings: the embedding of one prompt
)

// maxAnswer bounds what a Writer holds of one answer that is not a stream (or of an error).
const maxAnswer = 32 << 20

// Writer is the http.ResponseWriter llama-server's answer (or the router's own error) is proxied
// into; it writes Ollama's answer to the client: NDJSON objects as the stream's chunks arrive, one
// object for an answer that is not a stream, {"error": …} with the status for a failure. Call Finish
// once the proxy returned. It is used by one request's goroutine.
type Writer struct {
	out    http.ResponseWriter
	kind   Kind
	model  string
	stream bool
	start  time.Time
	// Load returns how long the request waited for its model (the lease's wait); nil → 0.
	Load func() time.Duration
	// TopLogprobs is the most alternatives a token's logprobs keep (Upstream.TopLogprobs).
	TopLogprobs int

	h      http.Header // what the proxy sets: llama-server's headers, not the client's
	status int         // 0 until WriteHeader
	failed bool        // status ≥ 400: the body is an error document, held for Finish
	buf    []byte      // a stream's partial line, or the whole answer that is not a stream
	done   bool        // the final object was written

	reason  string // finish reason seen
	timings *timings
	prompt  int // prompt tokens from usage
	calls   []ToolCall
	args    []strings.Builder // streamed tool-call arguments, by index
	probs   []Logprob         // logprobs not written yet: the next object carries them
}

func NewWriter(out http.ResponseWriter, kind Kind, model string, stream bool, start time.Time) *Writer {
	return &Writer{out: out, kind: kind, model: model, stream: stream, start: start, h: make(http.Header)}
}

// Header is the proxy's header map: llama-server's headers stay out of the client's answer.
func (w *Writer) Header() http.Header { return w.h }

// WriteHeader starts the client's answer (an error's waits for Finish).
func (w *Writer) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	if code >= 400 {
		w.failed = true
		return
	}
	w.begin(code)
}

func (w *Writer) begin(code int) {
	h := w.out.Header()
	for _, k := range []string{"Retry-After", "WWW-Authenticate"} {
		if v := w.h.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	if w.stream && code < 400 {
		h.Set("Content-Type", "application/x-ndjson")
	} else {
		h.Set("Content-Type", "application/json; charset=utf-8")
	}
	w.out.WriteHeader(code)
}

// Write takes a piece of llama-server's answer.
func (w *Writer) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.failed || !w.stream {
		if len(w.buf)+len(p) > maxAnswer {
			return 0, errTooLong
		}
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	for i := bytes.IndexByte(w.buf, '\n'); i >= 0; i = bytes.IndexByte(w.buf, '\n') {
		w.line(bytes.TrimRight(w.buf[:i], "\r"))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > maxAnswer {
		return 0, errTooLong
	}
	return len(p), nil
}

var errTooLong = errors.New("llama-server's answer is too long")

// Flush is a no-op: every object is flushed as it is written.
func (w *Writer) Flush() {}

// line handles one line of a server-sent event stream: only data lines carry anything.
func (w *Writer) line(l []byte) {
	data, ok := bytes.CutPrefix(l, []byte("data:"))
	if !ok || w.done {
		return // comments (loading progress), event names, blank separators
	}
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		w.final()
		return
	}
	var c chunk
	if json.Unmarshal(data, &c) != nil {
		return
	}
	if msg := c.errorMessage(); msg != "" {
		w.emit(ErrorResponse{Error: msg})
		w.done = true
		return
	}
	w.note(&c)
	for _, ch := range c.Choices {
		w.delta(ch.Delta)
	}
	if c.Content != nil && *c.Content != "" { // native /completion
		w.piece(*c.Content, "")
	}
	if len(w.probs) > 0 { // a token with no text of its own yet (part of a character)
		w.piece("", "")
	}
	if c.Stop && c.Choices == nil { // the native stream's last chunk
		w.final()
	}
}

// note keeps what a chunk tells of the whole answer: finish reason, timings, usage.
func (w *Writer) note(c *chunk) {
	for _, ch := range c.Choices {
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			w.reason = *ch.FinishReason
		}
		if ch.Logprobs != nil {
			w.probs = append(w.probs, ch.Logprobs.Content...)
		}
	}
	if c.StopType != "" {
		w.reason = c.StopType
	}
	if c.Timings != nil {
		w.timings = c.Timings
	}
	if c.Usage != nil && c.Usage.PromptTokens > 0 {
		w.prompt = c.Usage.PromptTokens
	}
	if c.TokensEvaluated > 0 && w.prompt == 0 {
		w.prompt = c.TokensEvaluated
	}
	w.probs = append(w.probs, c.Probs...)
}

// takeProbs hands over the logprobs not written yet, each with at most TopLogprobs alternatives.
func (w *Writer) takeProbs() []Logprob {
	p := w.probs
	w.probs = nil
	for i := range p {
		if len(p[i].TopLogprobs) > w.TopLogprobs {
			p[i].TopLogprobs = p[i].TopLogprobs[:w.TopLogprobs]
		}
		if len(p[i].TopLogprobs) == 0 {
			p[i].TopLogprobs = nil
		}
	}
	return p
}

func (w *Writer) delta(d message) {
	for _, tc := range d.ToolCalls {
		for len(w.calls) <= tc.Index {
			w.calls = append(w.calls, ToolCall{})
			w.args = append(w.args, strings.Builder{})
		}
		if tc.Function.Name != "" {
			w.calls[tc.Index].Function.Name = tc.Function.Name
		}
		w.args[tc.Index].WriteString(tc.Function.Arguments)
	}
	content, thinking := deref(d.Content), deref(d.ReasoningContent)
	if content != "" || thinking != "" {
		w.piece(content, thinking)
	}
}

// piece writes one non-final object with text (and thinking).
func (w *Writer) piece(content, thinking string) {
	w.emit(w.object(content, thinking, nil, false))
}

// final writes the streamed tool calls, if any, and the last object with the metrics.
func (w *Writer) final() {
	if w.done {
		return
	}
	if calls := w.toolCalls(); len(calls) > 0 && w.kind == KindChat {
		w.emit(w.object("", "", calls, false))
	}
	w.emit(w.object("", "", nil, true))
	w.done = true
}

func (w *Writer) toolCalls() []ToolCall {
	for i := range w.calls {
		w.calls[i].Function.Index = i
		w.calls[i].Function.Arguments = argsObject(w.args[i].String())
	}
	return w.calls
}

// argsObject is a tool call's arguments (OpenAI's JSON text) as the object Ollama sends.
func argsObject(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}")
	}
	var v map[string]any
	if json.Unmarshal([]byte(s), &v) != nil {
		b, _ := json.Marshal(s) // not an object: its text, as a string
		return b
	}
	return json.RawMessage(s)
}

func (w *Writer) object(content, thinking string, calls []ToolCall, done bool) any {
	now := Stamp(time.Now())
	var m *Metrics
	reason := ""
	if done {
		mm := w.metrics()
		m, reason = &mm, doneReason(w.reason)
	}
	probs := w.takeProbs()
	if w.kind == KindGenerate {
		return GenerateResponse{Model: w.model, CreatedAt: now, Response: content, Thinking: thinking, Done: done, DoneReason: reason, Metrics: m, Logprobs: probs}
	}
	return ChatResponse{Model: w.model, CreatedAt: now, Message: Message{Role: "assistant", Content: content, Thinking: thinking, ToolCalls: calls},
		Done: done, DoneReason: reason, Metrics: m, Logprobs: probs}
}

func (w *Writer) metrics() Metrics {
	m := Metrics{TotalDuration: int64(time.Since(w.start)), PromptEvalCount: w.prompt}
	if w.Load != nil {
		m.LoadDuration = int64(w.Load())
	}
	if t := w.timings; t != nil {
		if m.PromptEvalCount == 0 {
			m.PromptEvalCount = t.PromptN
		}
		m.PromptEvalDuration = int64(t.PromptMS * float64(time.Millisecond))
		m.EvalCount = t.PredictedN
		m.EvalDuration = int64(t.PredictedMS * float64(time.Millisecond))
	}
	return m
}

// doneReason is llama-server's finish reason in Ollama's words: "length" when the token limit
// ended it, else "stop" (a tool call included).
func doneReason(r string) string {
	switch r {
	case "length", "limit":
		return "length"
	}
	return "stop"
}

func (w *Writer) emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	_, _ = w.out.Write(append(b, '\n'))
	if f, ok := w.out.(http.Flusher); ok {
		f.Flush()
	}
}

// Finish writes what is still owed: the error with its status, the one object of an answer that
// was not a stream, or an error line for a stream that ended without its last chunk.
func (w *Writer) Finish() {
	switch {
	case w.status == 0:
		return // nothing was proxied (the caller answered itself)
	case w.failed:
		w.begin(w.status)
		w.emit(ErrorResponse{Error: errorText(w.buf, w.model, w.status)})
	case w.kind == KindEmbed || w.kind == KindEmbeddings:
		w.embeddings()
	case !w.stream:
		var c chunk
		if err := json.Unmarshal(w.buf, &c); err != nil {
			w.emit(ErrorResponse{Error: "llama-server's answer could not be read: " + err.Error()})
			return
		}
		w.note(&c)
		content, thinking := "", ""
		for _, ch := range c.Choices {
			content, thinking = deref(ch.Message.Content), deref(ch.Message.ReasoningContent)
			for j := range ch.Message.ToolCalls {
				ch.Message.ToolCalls[j].Index = j // a whole answer's calls carry no index
			}
			w.delta(message{ToolCalls: ch.Message.ToolCalls})
		}
		if c.Content != nil {
			content = *c.Content
		}
		var calls []ToolCall
		if w.kind == KindChat {
			calls = w.toolCalls()
		}
		w.emit(w.object(content, thinking, calls, true))
	case !w.done:
		// The stream ended without its last chunk: llama-server failed or the connection to it was
		// cut. Said as Ollama's clients read a failure mid-stream, never as a complete answer.
		msg := "llama-server's answer ended before it was complete"
		if rest := bytes.TrimSpace(w.buf); len(rest) > 0 && rest[0] == '{' {
			if t := errorText(rest, w.model, http.StatusBadGateway); t != "" && t != string(rest) {
				msg = t
			}
		}
		w.emit(ErrorResponse{Error: msg})
		w.done = true
	}
}

// embeddings writes llama-server's /v1/embeddings answer in Ollama's shape.
func (w *Writer) embeddings() {
	var doc struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(w.buf, &doc); err != nil {
		w.emit(ErrorResponse{Error: "llama-server's answer could not be read: " + err.Error()})
		return
	}
	vecs := make([][]float64, len(doc.Data))
	for i, d := range doc.Data {
		if d.Index >= 0 && d.Index < len(vecs) && vecs[d.Index] == nil {
			vecs[d.Index] = d.Embedding
		} else {
			vecs[i] = d.Embedding
		}
	}
	if w.kind == KindEmbeddings {
		out := EmbeddingsResponse{Embedding: []float64{}}
		if len(vecs) > 0 && vecs[0] != nil {
			out.Embedding = vecs[0]
		}
		w.emit(out)
		return
	}
	m := w.metrics()
	w.emit(EmbedResponse{Model: w.model, Embeddings: vecs, EmbedMetrics: &EmbedMetrics{TotalDuration: m.TotalDuration, LoadDuration: m.LoadDuration, PromptEvalCount: doc.Usage.PromptTokens}})
}

// errorText is the message of an error document (the router's OpenAI-shaped one, or
// llama-server's), in Ollama's words where Ollama has its own.
func errorText(body []byte, model string, status int) string {
	var doc struct {
		Error json.RawMessage `json:"error"`
	}
	msg, code := strings.TrimSpace(string(body)), ""
	if json.Unmarshal(body, &doc) == nil && len(doc.Error) > 0 {
		var s string
		var o struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
		}
		switch {
		case json.Unmarshal(doc.Error, &s) == nil:
			msg = s
		case json.Unmarshal(doc.Error, &o) == nil:
			msg = o.Message
			code, _ = o.Code.(string)
		}
	}
	if code == "model_not_found" || (status == http.StatusNotFound && strings.Contains(msg, "not found")) {
		return `model "` + model + `" not found, try pulling it first`
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return msg
}

// chunk is one piece of llama-server's answer: an OpenAI chat chunk or completion, or a native
// /completion chunk, or an error event.
type chunk struct {
	Choices []struct {
		Delta        message `json:"delta"`
		Message      message `json:"message"`
		FinishReason *string `json:"finish_reason"`
		Logprobs     *struct {
			Content []Logprob `json:"content"`
		} `json:"logprobs"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
	Timings         *timings        `json:"timings"`
	Content         *string         `json:"content"`
	Stop            bool            `json:"stop"`
	StopType        string          `json:"stop_type"`
	TokensEvaluated int             `json:"tokens_evaluated"`
	Probs           []Logprob       `json:"completion_probabilities"` // native endpoints' logprobs
	Error           json.RawMessage `json:"error"`
}

func (c *chunk) errorMessage() string {
	if len(c.Error) == 0 || string(c.Error) == "null" {
		return ""
	}
	return errorText([]byte(`{"error":`+string(c.Error)+`}`), "", 0)
}

type message struct {
	Content          *string `json:"content"`
	ReasoningContent *string `json:"reasoning_content"`
	ToolCalls        []struct {
		Index    int `json:"index"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type timings struct {
	PromptN     int     `json:"prompt_n"`
	PromptMS    float64 `json:"prompt_ms"`
	PredictedN  int     `json:"predicted_n"`
	PredictedMS float64 `json:"predicted_ms"`
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
