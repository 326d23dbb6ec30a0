package ollama

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrBadRequest is matched by the errors of requests Ollama would refuse with 400.
var ErrBadRequest = errors.New("bad request")

func bad(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, a...))
}

// Duration is keep_alive: a number of seconds or a Go duration string ("5m"); negative keeps the
// model loaded, 0 unloads it once idle.
type Duration struct{ time.Duration }

// UnmarshalJSON reads seconds (a number) or a duration string, as Ollama does.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch t := v.(type) {
	case float64:
		if t < 0 {
			d.Duration = -1
			return nil
		}
		d.Duration = time.Duration(t * float64(time.Second))
	case string:
		if n, err := strconv.ParseFloat(t, 64); err == nil {
			return d.UnmarshalJSON([]byte(strconv.FormatFloat(n, 'f', -1, 64)))
		}
		p, err := time.ParseDuration(t)
		if err != nil {
			return bad("keep_alive %q is not a duration", t)
		}
		if p < 0 {
			p = -1
		}
		d.Duration = p
	case nil:
	default:
		return bad("keep_alive must be a number of seconds or a duration")
	}
	return nil
}

// Upstream is what a request becomes for llama-server: the path and the JSON body.
type Upstream struct {
	Path   string
	Body   []byte
	Stream bool
	// TopLogprobs is how many alternatives each token's logprobs keep (the request's top_logprobs):
	// the native endpoints give at least one when asked for logprobs.
	TopLogprobs int
}

// streamOf is Ollama's default: a stream unless "stream": false.
func streamOf(s *bool) bool { return s == nil || *s }

// Sampling maps Ollama's options onto llama-server's request fields (its OpenAI-compatible and
// native endpoints take the same names). Options that Ollama applies when a model loads
// (num_ctx, num_gpu, num_thread, …) are set by Llamatray's own model settings and are ignored here;
// unknown options are ignored, as Ollama does. A value of the wrong type is an error.
func Sampling(opts map[string]any, out map[string]any) error {
	for k, v := range opts {
		if v == nil {
			continue
		}
		dst, kind, ok := OptionField(k)
		if !ok {
			continue
		}
		switch kind {
		case 'f':
			f, ok := v.(float64)
			if !ok {
				return bad("option %q must be a number", k)
			}
			out[dst] = f
		case 'i':
			f, ok := v.(float64)
			if !ok || f != math.Trunc(f) {
				return bad("option %q must be an integer", k)
			}
			out[dst] = int64(f)
		case 's':
			stops, err := stopList(v)
			if err != nil {
				return bad("option %q: %v", k, err)
			}
			out[dst] = stops
		}
	}
	return nil
}

// WithDefaults is a request's options over a model's defaults (its Ollama params layer): what the
// request sets wins. Neither map is changed.
func WithDefaults(opts, defaults map[string]any) map[string]any {
	if len(defaults) == 0 {
		return opts
	}
	out := maps.Clone(defaults)
	maps.Copy(out, opts)
	return out
}

// OptionField names the llama-server request field an Ollama option becomes (num_predict:
// n_predict) and its kind: f(loat), i(nt), s(top list); false for an option that becomes none.
func OptionField(k string) (string, byte, bool) {
	switch k {
	case "temperature", "top_p", "min_p", "typical_p", "repeat_penalty", "presence_penalty",
		"frequency_penalty", "mirostat_tau", "mirostat_eta", "tfs_z":
		return k, 'f', true
	case "top_k", "seed", "repeat_last_n", "mirostat":
		return k, 'i', true
	case "num_predict":
		return "n_predict", 'i', true
	case "num_keep":
		return "n_keep", 'i', true
	case "stop":
		return "stop", 's', true
	}
	return "", 0, false
}

func stopList(v any) ([]string, error) {
	switch t := v.(type) {
	case string:
		return []string{t}, nil
	case []any:
		out := make([]string, 0, len(t))
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				return nil, errors.New("must be a list of strings")
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, errors.New("must be a string or a list of strings")
}

// responseFormat maps Ollama's format ("json", or a JSON schema object) onto llama-server's
// response_format.
func responseFormat(f json.RawMessage, out map[string]any) error {
	f = bytes.TrimSpace(f)
	if len(f) == 0 || string(f) == "null" || string(f) == `""` {
		return nil
	}
	var s string
	if json.Unmarshal(f, &s) == nil {
		if s != "json" {
			return bad("format %q: want \"json\" or a JSON schema", s)
		}
		out["response_format"] = map[string]any{"type": "json_object"}
		return nil
	}
	var schema map[string]any
	if err := json.Unmarshal(f, &schema); err != nil {
		return bad("format must be \"json\" or a JSON schema object")
	}
	out["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "format", "schema": schema}}
	return nil
}

// think maps Ollama's think (true, false, "low"/"medium"/"high") onto llama-server: false turns
// the chat template's thinking off; anything else leaves it on, with the reasoning returned apart.
func think(t json.RawMessage, out map[string]any) error {
	t = bytes.TrimSpace(t)
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	var on bool
	if json.Unmarshal(t, &on) != nil {
		var level string
		if json.Unmarshal(t, &level) != nil || (level != "low" && level != "medium" && level != "high") {
			return bad("think must be true, false, \"low\", \"medium\" or \"high\"")
		}
		on = true
		out["reasoning_effort"] = level
	}
	out["chat_template_kwargs"] = map[string]any{"enable_thinking": on}
	if on {
		out["reasoning_format"] = "deepseek" // the reasoning apart from the content
	}
	return nil
}

// Chat turns an /api/chat request into llama-server's /v1/chat/completions. model is the name
// the router resolves (sent as is; the child serves one model).
func Chat(req ChatRequest) (Upstream, error) {
	body := map[string]any{"model": req.Model}
	msgs := make([]any, 0, len(req.Messages))
	for i, m := range req.Messages {
		om, err := openAIMessage(m, i)
		if err != nil {
			return Upstream{}, err
		}
		msgs = append(msgs, om)
	}
	body["messages"] = msgs
	if t := bytes.TrimSpace(req.Tools); len(t) > 0 && string(t) != "null" {
		body["tools"] = req.Tools
	}
	return finish("/v1/chat/completions", body, streamOf(req.Stream), req.Options, req.Format, req.Think, req.Logprobs, req.TopLogprobs)
}

// maxTopLogprobs is the most top_logprobs Ollama takes.
const maxTopLogprobs = 20

// logprobs asks llama-server for each token's log probability, and top alternatives: OpenAI's
// logprobs and top_logprobs on the chat endpoint, n_probs on the native ones (body has a prompt).
func logprobs(body map[string]any, want bool, top int) error {
	if top < 0 || top > maxTopLogprobs {
		return bad("top_logprobs must be between 0 and %d", maxTopLogprobs)
	}
	if !want {
		return nil
	}
	if _, native := body["prompt"]; native {
		body["n_probs"] = max(top, 1)
		return nil
	}
	body["logprobs"] = true
	if top > 0 {
		body["top_logprobs"] = top
	}
	return nil
}

// Generate turns an /api/generate request into llama-server's: the chat endpoint with the
// system and prompt as messages (so the model's template applies, as Ollama's does), or with raw
// the native /completion with the prompt as it is.
func Generate(req GenerateRequest) (Upstream, error) {
	if req.Template != "" {
		return Upstream{}, bad("template is not supported: the model's own chat template applies (or use raw)")
	}
	stream := streamOf(req.Stream)
	body := map[string]any{"model": req.Model}
	switch {
	case req.Suffix != "": // fill in the middle (code completion): llama-server's /infill
		if len(req.Images) > 0 {
			return Upstream{}, bad("images cannot be used with suffix")
		}
		body["input_prefix"], body["input_suffix"], body["prompt"] = req.Prompt, req.Suffix, ""
		return finish("/infill", body, stream, req.Options, req.Format, nil, req.Logprobs, req.TopLogprobs)
	case req.Raw:
		if len(req.Images) > 0 {
			return Upstream{}, bad("images need the model's template: leave raw off")
		}
		body["prompt"] = req.Prompt
		return finish("/completion", body, stream, req.Options, req.Format, nil, req.Logprobs, req.TopLogprobs)
	}
	var msgs []any
	if req.System != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": req.System})
	}
	um, err := openAIMessage(Message{Role: "user", Content: req.Prompt, Images: req.Images}, 0)
	if err != nil {
		return Upstream{}, err
	}
	body["messages"] = append(msgs, um)
	return finish("/v1/chat/completions", body, stream, req.Options, req.Format, req.Think, req.Logprobs, req.TopLogprobs)
}

// finish completes body for llama-server's path and encodes it: the stream (with its usage on the
// chat endpoint), the request's options, format, think and logprobs.
func finish(path string, body map[string]any, stream bool, opts map[string]any, format, th json.RawMessage, want bool, top int) (Upstream, error) {
	body["stream"] = stream
	if stream && body["messages"] != nil {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	if err := Sampling(opts, body); err != nil {
		return Upstream{}, err
	}
	if n, ok := body["n_predict"]; ok && body["messages"] != nil {
		delete(body, "n_predict")
		if n.(int64) >= 0 {
			body["max_tokens"] = n
		}
	}
	if err := responseFormat(format, body); err != nil {
		return Upstream{}, err
	}
	if err := think(th, body); err != nil {
		return Upstream{}, err
	}
	if err := logprobs(body, want, top); err != nil {
		return Upstream{}, err
	}
	b, err := json.Marshal(body)
	return Upstream{Path: path, Body: b, Stream: stream, TopLogprobs: top}, err
}

// openAIMessage is an Ollama message in OpenAI's shape: images become image_url parts, tool calls
// carry their arguments as a JSON string, a tool answer names its tool.
func openAIMessage(m Message, i int) (map[string]any, error) {
	switch m.Role {
	case "system", "user", "assistant", "tool":
	default:
		return nil, bad("messages[%d]: role %q: want system, user, assistant or tool", i, m.Role)
	}
	out := map[string]any{"role": m.Role, "content": m.Content}
	if len(m.Images) > 0 {
		parts := []any{map[string]any{"type": "text", "text": m.Content}}
		for _, img := range m.Images {
			parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:" + imageType(img) + ";base64," + img}})
		}
		out["content"] = parts
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]any, 0, len(m.ToolCalls))
		for j, c := range m.ToolCalls {
			args := string(bytes.TrimSpace(c.Function.Arguments))
			if args == "" {
				args = "{}"
			}
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d_%d", i, j), "type": "function",
				"function": map[string]any{"name": c.Function.Name, "arguments": args}})
		}
		out["tool_calls"] = calls
	}
	if m.Role == "tool" && m.ToolName != "" {
		out["name"] = m.ToolName
	}
	if m.Thinking != "" && m.Role == "assistant" {
		out["reasoning_content"] = m.Thinking
	}
	return out, nil
}

// imageType guesses an image's media type from its base64 start (PNG, JPEG, GIF, WebP).
func imageType(b64 string) string {
	switch {
	case strings.HasPrefix(b64, "iVBOR"):
		return "image/png"
	case strings.HasPrefix(b64, "/9j/"):
		return "image/jpeg"
	case strings.HasPrefix(b64, "R0lG"):
		return "image/gif"
	case strings.HasPrefix(b64, "UklG"):
		return "image/webp"
	}
	return "image/png"
}

// EmbedInputs reads /api/embed's input: a string or a list of strings.
func EmbedInputs(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, bad("input must be a string or a list of strings")
	}
	return many, nil
}

// Embeddings is llama-server's /v1/embeddings body for inputs.
func Embeddings(model string, inputs []string) Upstream {
	b, _ := json.Marshal(map[string]any{"model": model, "input": inputs, "encoding_format": "float"})
	return Upstream{Path: "/v1/embeddings", Body: b}
}
