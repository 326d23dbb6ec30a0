package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"time"
)

// words are the generated text, one word per token.
var words = strings.Fields("The quick brown fox jumps over the lazy dog while a small llama watches from the hill and counts every step it takes")

// piece is the text of the i-th generated token.
func piece(i int) string { return " " + words[i%len(words)] }

// errCancelled says the client went away before generation finished.
var errCancelled = errors.New("client disconnected")

// generate is the decode loop of one task: it produces n tokens, one every
// token_delay, handing each to emit. It stops when the client goes away
// (errCancelled) or emit fails, and crashes the process mid-stream when
// crash_after_requests says this task should.
func (s *server) generate(t *task, n int, emit func(i int, text string) error) (int, error) {
	crash := s.kn.CrashAfterRequests > 0 && t.ordinal >= s.kn.CrashAfterRequests
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for i := 0; i < n; i++ {
		if crash && i == n/2 {
			s.crash(fmt.Sprintf("crash_after_requests=%d reached by task %d after %d tokens", s.kn.CrashAfterRequests, t.id, i))
		}
		timer.Reset(s.kn.TokenDelay)
		select {
		case <-t.ctx.Done():
			return i, errCancelled
		case <-timer.C:
		}
		if err := emit(i, piece(i)); err != nil {
			return i, errCancelled
		}
	}
	if crash {
		s.crash(fmt.Sprintf("crash_after_requests=%d reached by task %d", s.kn.CrashAfterRequests, t.id))
	}
	return n, nil
}

// predictCount is how many tokens a request gets: the tokens knob, capped
// by the first positive limit among keys. The reason is "length" when the
// limit cut generation short, else "stop".
func (s *server) predictCount(body map[string]any, keys ...string) (int, string) {
	n := s.kn.Tokens
	for _, k := range keys {
		if v, ok := body[k].(float64); ok && v >= 0 {
			if int(v) < n {
				return int(v), "length"
			}
			break
		}
	}
	return n, "stop"
}

// tokenize packs up to four bytes of text into one token id, so token
// counts look like a real tokenizer's and detokenize inverts it exactly.
func tokenize(text string) []int {
	b := []byte(text)
	ids := make([]int, 0, (len(b)+3)/4)
	for i := 0; i < len(b); i += 4 {
		id := 0
		for j := 0; j < 4 && i+j < len(b); j++ {
			id |= int(b[i+j]) << (8 * j)
		}
		ids = append(ids, id)
	}
	return ids
}

// detokenize is the inverse of tokenize.
func detokenize(ids []int) (string, error) {
	var b []byte
	for _, id := range ids {
		if id < 0 || id >= 1<<32 {
			return "", fmt.Errorf("invalid token id %d", id)
		}
		for ; id > 0; id >>= 8 {
			b = append(b, byte(id&0xff))
		}
	}
	return string(b), nil
}

// embedDim is the length of embedding vectors.
const embedDim = 16

// embed returns a deterministic unit vector for text.
func embed(text string) []float64 {
	h := fnv.New64a()
	io.WriteString(h, text)
	x := h.Sum64() | 1
	v := make([]float64, embedDim)
	var norm float64
	for i := range v {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		v[i] = float64(x%20001)/10000 - 1
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] /= norm
	}
	return v
}

// textOf extracts the text of a message content: a string or an array of
// {"type":"text","text":...} parts.
func textOf(content any) string {
	switch c := content.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, p := range c {
			if m, ok := p.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					parts = append(parts, t)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// chatML renders messages with the ChatML template and the assistant prompt.
func chatML(system string, messages []any) string {
	var b strings.Builder
	if system != "" {
		fmt.Fprintf(&b, "<|im_start|>system\n%s<|im_end|>\n", system)
	}
	for _, m := range messages {
		msg, _ := m.(map[string]any)
		role, _ := msg["role"].(string)
		fmt.Fprintf(&b, "<|im_start|>%s\n%s<|im_end|>\n", role, textOf(msg["content"]))
	}
	b.WriteString("<|im_start|>assistant\n")
	return b.String()
}

// inputs reads an "input"-style field: a string, an array of token ids (one
// input), or an array of strings and token arrays. Token arrays become their
// JSON text, which is all the fake needs to derive a vector.
func inputs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		if len(x) > 0 {
			if _, ids := x[0].(float64); ids {
				b, _ := json.Marshal(x)
				return []string{string(b)}
			}
		}
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
				continue
			}
			b, _ := json.Marshal(e)
			out = append(out, string(b))
		}
		return out
	}
	return nil
}

// randomID returns prefix plus 32 random alphanumerics.
func randomID(prefix string) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 32)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b)
}

// timings is llama-server's per-request timing object.
func timings(t *task, predicted int) map[string]any {
	ms := float64(time.Since(t.start).Microseconds()) / 1000
	perTok := 0.0
	if predicted > 0 {
		perTok = ms / float64(predicted)
	}
	return map[string]any{
		"prompt_n": t.prompt, "prompt_ms": 0.1, "prompt_per_token_ms": 0.1, "prompt_per_second": 10000.0,
		"predicted_n": predicted, "predicted_ms": ms, "predicted_per_token_ms": perTok,
		"predicted_per_second": float64(predicted) / math.Max(ms/1000, 1e-9),
	}
}

// modelSize is the size of the model file in bytes (0 if unreadable).
func (s *server) modelSize() int64 {
	fi, err := os.Stat(s.opts.model)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// responseModel is the model name echoed in responses: the request's, else the id.
func (s *server) responseModel(body map[string]any) string {
	if m, ok := body["model"].(string); ok && m != "" {
		return m
	}
	return s.modelID
}

// sse writes a server-sent event stream. Like llama-server, it closes the
// connection once the stream has ended (the response itself is a clean
// chunked one without "Connection: close"), so a client cannot reuse the
// connection of a streamed request.
type sse struct {
	ctx   context.Context // ends when the client goes away or the stream ends
	write func(msg string) error
	end   func()
}

// open starts the response of a generating request. For a stream it sends
// the event-stream headers and returns the stream; the context it returns
// ends when the client goes away.
func (s *server) open(w http.ResponseWriter, r *http.Request, stream bool) (*sse, context.Context) {
	if !stream {
		return nil, r.Context()
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Keep-Alive", "timeout=5, max=100")
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil { // not HTTP/1: stream through the ResponseWriter
		w.WriteHeader(200)
		rc := http.NewResponseController(w)
		rc.Flush()
		return &sse{ctx: r.Context(), end: func() {}, write: func(msg string) error {
			if _, err := io.WriteString(w, msg); err != nil {
				return err
			}
			return rc.Flush()
		}}, r.Context()
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // the client sends nothing more; a read error means it left
		buf := make([]byte, 512)
		for {
			if _, err := rw.Read(buf); err != nil {
				cancel()
				return
			}
		}
	}()
	rw.WriteString("HTTP/1.1 200 OK\r\n")
	w.Header().Write(rw)
	rw.WriteString("Transfer-Encoding: chunked\r\n\r\n")
	rw.Flush()
	ev := &sse{ctx: ctx}
	ev.write = func(msg string) error {
		if _, err := fmt.Fprintf(rw, "%x\r\n%s\r\n", len(msg), msg); err != nil {
			return err
		}
		return rw.Flush()
	}
	ev.end = func() {
		rw.WriteString("0\r\n\r\n")
		rw.Flush()
		conn.Close()
		cancel()
	}
	return ev, ctx
}

// close ends the stream; it does nothing for a nil stream.
func (e *sse) close() {
	if e != nil {
		e.end()
	}
}

// data writes "data: <json>\n\n".
func (e *sse) data(v any) error { return e.event("", v) }

// event writes "event: <name>\ndata: <json>\n\n" (no event line when name is empty).
func (e *sse) event(name string, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	msg := "data: " + string(b) + "\n\n"
	if name != "" {
		msg = "event: " + name + "\n" + msg
	}
	return e.write(msg)
}

// done writes the OpenAI end marker.
func (e *sse) done() error { return e.write("data: [DONE]\n\n") }

// startTask records and registers a generating request (waking a sleeping
// model first); the handler then writes any preamble and calls runTask.
func (s *server) startTask(ctx context.Context, r *http.Request, body map[string]any, stream bool, prompt string) *task {
	model, _ := body["model"].(string)
	s.rec.write(recordEvent{Event: "request", Path: r.URL.Path, Model: model, Stream: stream})
	return s.beginTask(ctx, len(tokenize(prompt)))
}

// runTask generates n tokens for t and unregisters it. It returns the tokens
// produced and false when the client went away.
func (s *server) runTask(t *task, n int, emit func(i int, text string) error) (int, bool) {
	produced, err := s.generate(t, n, emit)
	s.endTask(t, produced, err != nil)
	return produced, err == nil
}
