// Package ollama speaks Ollama's HTTP API (github.com/ollama/ollama, docs/api.md) on top of
// llama-server: it reads Ollama's requests, turns them into llama-server's (OpenAI-compatible chat,
// native completion, embeddings) and turns the answers, streamed or not, back into Ollama's shapes.
// The HTTP layer (router/httpapi, as Host) reads bodies, resolves names, holds the lease and proxies.
package ollama

import (
	"encoding/json"
	"time"
)

// Version is what GET /api/version reports: an Ollama version recent enough that clients enable
// the features served here (tools, thinking, structured output).
const Version = "0.12.0"

// Running is the body of GET / that Ollama's clients probe for.
const Running = "Ollama is running"

// ToolCall is one call of a tool by the model; Arguments is a JSON object.
type ToolCall struct {
	Function ToolCallFunction `json:"function"`
}

type ToolCallFunction struct {
	Index     int             `json:"index,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type Message struct {
	Role      string     `json:"role"`
	Content   string     `json:"content"`
	Thinking  string     `json:"thinking,omitempty"`
	Images    []string   `json:"images,omitempty"` // base64
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	ToolName  string     `json:"tool_name,omitempty"`
}

// ChatRequest is the body of POST /api/chat.
type ChatRequest struct {
	Model       string          `json:"model"`
	Messages    []Message       `json:"messages"`
	Tools       json.RawMessage `json:"tools,omitempty"` // OpenAI's function-tool shape, passed as is
	Stream      *bool           `json:"stream,omitempty"`
	Format      json.RawMessage `json:"format,omitempty"` // "json" or a JSON schema
	KeepAlive   *Duration       `json:"keep_alive,omitempty"`
	Options     map[string]any  `json:"options,omitempty"`
	Think       json.RawMessage `json:"think,omitempty"`        // true, false, or "low"/"medium"/"high"
	Logprobs    bool            `json:"logprobs,omitempty"`     // each token's log probability in the answer
	TopLogprobs int             `json:"top_logprobs,omitempty"` // and this many likeliest tokens at each position (0-20)
}

// GenerateRequest is the body of POST /api/generate.
type GenerateRequest struct {
	Model       string          `json:"model"`
	Prompt      string          `json:"prompt"`
	Suffix      string          `json:"suffix,omitempty"`
	System      string          `json:"system,omitempty"`
	Template    string          `json:"template,omitempty"`
	Context     []int           `json:"context,omitempty"`
	Stream      *bool           `json:"stream,omitempty"`
	Raw         bool            `json:"raw,omitempty"`
	Format      json.RawMessage `json:"format,omitempty"`
	KeepAlive   *Duration       `json:"keep_alive,omitempty"`
	Images      []string        `json:"images,omitempty"`
	Options     map[string]any  `json:"options,omitempty"`
	Think       json.RawMessage `json:"think,omitempty"`
	Logprobs    bool            `json:"logprobs,omitempty"`
	TopLogprobs int             `json:"top_logprobs,omitempty"`
}

// Metrics are the timings of a finished answer, in nanoseconds as Ollama sends them: in the last
// object of an answer only (a nil *Metrics leaves them all out).
type Metrics struct {
	TotalDuration      int64 `json:"total_duration"`
	LoadDuration       int64 `json:"load_duration"`
	PromptEvalCount    int   `json:"prompt_eval_count"`
	PromptEvalDuration int64 `json:"prompt_eval_duration"`
	EvalCount          int   `json:"eval_count"`
	EvalDuration       int64 `json:"eval_duration"`
}

// ChatResponse is one object of /api/chat's answer (a stream sends many, the last with Done).
type ChatResponse struct {
	Model      string  `json:"model"`
	CreatedAt  string  `json:"created_at"`
	Message    Message `json:"message"`
	Done       bool    `json:"done"`
	DoneReason string  `json:"done_reason,omitempty"`
	*Metrics
	Logprobs []Logprob `json:"logprobs,omitempty"`
}

// GenerateResponse is one object of /api/generate's answer.
type GenerateResponse struct {
	Model      string `json:"model"`
	CreatedAt  string `json:"created_at"`
	Response   string `json:"response"`
	Thinking   string `json:"thinking,omitempty"`
	Done       bool   `json:"done"`
	DoneReason string `json:"done_reason,omitempty"`
	Context    []int  `json:"context,omitempty"`
	*Metrics
	Logprobs []Logprob `json:"logprobs,omitempty"`
}

// TokenLogprob is one token with its log probability; Bytes are its UTF-8 bytes.
type TokenLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes,omitempty"`
}

// Logprob is a generated token with its log probability and the likeliest tokens at its position.
// llama-server's entries (OpenAI's logprobs.content, /completion's completion_probabilities) have
// the same fields, plus an id, and decode into it.
type Logprob struct {
	TokenLogprob
	TopLogprobs []TokenLogprob `json:"top_logprobs,omitempty"`
}

// EmbedRequest is the body of POST /api/embed, Input a string or a list of strings, and of the older
// POST /api/embeddings, with one Prompt.
type EmbedRequest struct {
	Model     string          `json:"model"`
	Input     json.RawMessage `json:"input"`
	Prompt    string          `json:"prompt"`
	Truncate  *bool           `json:"truncate,omitempty"`
	KeepAlive *Duration       `json:"keep_alive,omitempty"`
	Options   map[string]any  `json:"options,omitempty"`
}

// EmbedResponse is the answer of POST /api/embed; one that only loaded or unloaded the model has no
// metrics.
type EmbedResponse struct {
	Model      string      `json:"model"`
	Embeddings [][]float64 `json:"embeddings"`
	*EmbedMetrics
}

type EmbedMetrics struct {
	TotalDuration   int64 `json:"total_duration"`
	LoadDuration    int64 `json:"load_duration"`
	PromptEvalCount int   `json:"prompt_eval_count"`
}

// EmbeddingsResponse is the answer of POST /api/embeddings.
type EmbeddingsResponse struct {
	Embedding []float64 `json:"embedding"`
}

// Details describe a model in /api/tags, /api/show and /api/ps.
type Details struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
	ContextLength     int      `json:"context_length,omitempty"`   // /api/tags only
	EmbeddingLength   int      `json:"embedding_length,omitempty"` // /api/tags only
}

// ListModel is one model of GET /api/tags.
type ListModel struct {
	Name         string    `json:"name"`
	Model        string    `json:"model"`
	ModifiedAt   time.Time `json:"modified_at"`
	Size         int64     `json:"size"`
	Digest       string    `json:"digest"`
	Details      Details   `json:"details"`
	Capabilities []string  `json:"capabilities"`
}

// ListResponse is the answer of GET /api/tags.
type ListResponse struct {
	Models []ListModel `json:"models"`
}

// ProcessModel is one running model of GET /api/ps.
type ProcessModel struct {
	Name          string    `json:"name"`
	Model         string    `json:"model"`
	Size          int64     `json:"size"`
	Digest        string    `json:"digest"`
	Details       Details   `json:"details"`
	ExpiresAt     time.Time `json:"expires_at"`
	SizeVRAM      int64     `json:"size_vram"`
	ContextLength int       `json:"context_length,omitempty"`
}

// ProcessResponse is the answer of GET /api/ps.
type ProcessResponse struct {
	Models []ProcessModel `json:"models"`
}

// ShowResponse is the answer of POST /api/show.
type ShowResponse struct {
	License      string         `json:"license,omitempty"`
	Modelfile    string         `json:"modelfile"`
	Parameters   string         `json:"parameters,omitempty"`
	Template     string         `json:"template"`
	System       string         `json:"system,omitempty"`
	Details      Details        `json:"details"`
	ModelInfo    map[string]any `json:"model_info"`
	Capabilities []string       `json:"capabilities"`
	ModifiedAt   time.Time      `json:"modified_at"`
}

// NameRequest is a body that names one model: /api/show, /api/delete, /api/pull (Name is the
// older spelling).
type NameRequest struct {
	Model  string `json:"model"`
	Name   string `json:"name,omitempty"`
	Stream *bool  `json:"stream,omitempty"`
}

func (r NameRequest) Named() string {
	if r.Model != "" {
		return r.Model
	}
	return r.Name
}

// CopyRequest is the body of POST /api/copy.
type CopyRequest struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// ProgressResponse is one status line of /api/pull.
type ProgressResponse struct {
	Status    string `json:"status"`
	Digest    string `json:"digest,omitempty"`
	Total     int64  `json:"total,omitempty"`
	Completed int64  `json:"completed,omitempty"`
}

// ErrorResponse is Ollama's error body.
type ErrorResponse struct {
	Error string `json:"error"`
}

// Stamp is created_at as Ollama writes it.
func Stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
