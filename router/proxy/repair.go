package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// Stream repair. llama-server 0.7.0 drops the first partial result of a stream when its first token
// is an incomplete UTF-8 sequence, and that result is where the stream's opening lives: the
// Anthropic message_start event and the OpenAI chunk that carries "role":"assistant". Strict SDKs
// then fail the whole stream. The repair looks at the first event of a streamed answer only, adds
// the opening the child left out in front of it, and from then on passes the stream through as it
// comes. Nothing the child sent is changed, dropped or reordered, and nothing is held back beyond
// the first event.

// streamKind says which repair a streamed answer gets.
type streamKind int

const (
	streamOther     streamKind = iota
	streamAnthropic            // POST /v1/messages
	streamOpenAI               // POST /v1/chat/completions, /chat/completions
)

// streamKindOf picks the repair by the path the child is asked.
func streamKindOf(path string) streamKind {
	switch path {
	case "/v1/messages":
		return streamAnthropic
	case "/v1/chat/completions", "/chat/completions":
		return streamOpenAI
	}
	return streamOther
}

// maxFirstEvent bounds how much of a stream is held while looking for the end of its first event;
// a longer first event passes unrepaired.
const maxFirstEvent = 256 << 10

// Repair wraps resp.Body when resp is a successful SSE answer that may lack its opening.
// model is the model's ID, the name llama-server's own events give it (the child runs with the ID as
// its alias), so that an opening the repair restores reads as the one the child would have sent;
// id is the request ID, for a synthesized message_start.
func Repair(resp *http.Response, model, id string) {
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return
	}
	kind := streamKindOf(resp.Request.URL.Path)
	if kind == streamOther {
		return
	}
	resp.Body = &repairReader{body: resp.Body, fix: func(ev []byte) []byte { return opening(kind, ev, model, id) }}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
}

// repairReader passes a stream through, after prefixing its first event with what fix returns.
type repairReader struct {
	body io.ReadCloser
	fix  func(firstEvent []byte) []byte
	out  []byte // bytes to hand out before reading the body again
	head []byte // the start of the stream, up to the end of its first event
	done bool   // the first event was seen: the body passes straight through
}

func (r *repairReader) Close() error { return r.body.Close() }

func (r *repairReader) Read(p []byte) (int, error) {
	if len(r.out) > 0 {
		n := copy(p, r.out)
		r.out = r.out[n:]
		return n, nil
	}
	if r.done || len(p) == 0 {
		return r.body.Read(p)
	}
	for {
		n, err := r.body.Read(p)
		r.head = append(r.head, p[:n]...)
		end := firstEventEnd(r.head)
		switch {
		case end >= 0:
			r.out = append(r.fix(r.head[:end]), r.head...)
		case err != nil || len(r.head) > maxFirstEvent:
			r.out = r.head // no complete first event: pass what came unrepaired
		default:
			continue
		}
		r.done, r.head = true, nil
		n = copy(p, r.out)
		r.out = r.out[n:]
		if len(r.out) > 0 {
			err = nil // the caller comes back for the rest; the body repeats its error then
		}
		return n, err
	}
}

// firstEventEnd returns the offset just past the first SSE event of b that has a data line (blocks
// of comments only, and empty blocks, come before it), or -1 when b does not hold one yet.
func firstEventEnd(b []byte) int {
	off := 0
	for {
		i, sep := blockEnd(b[off:])
		if i < 0 {
			return -1
		}
		block := b[off : off+i]
		off += i + sep
		for _, line := range bytes.Split(block, []byte("\n")) {
			if bytes.HasPrefix(line, []byte("data:")) {
				return off
			}
		}
	}
}

// blockEnd finds the blank line that ends an SSE block: its offset and the separator's length.
func blockEnd(b []byte) (int, int) {
	i := bytes.Index(b, []byte("\n\n"))
	j := bytes.Index(b, []byte("\r\n\r\n"))
	switch {
	case i < 0 && j < 0:
		return -1, 0
	case j >= 0 && (i < 0 || j < i):
		return j, 4
	default:
		return i, 2
	}
}

// eventData returns the "event:" name and the joined data lines of one SSE event.
func eventData(ev []byte) (string, []byte) {
	var name string
	var data [][]byte
	for _, line := range bytes.Split(ev, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if v, ok := bytes.CutPrefix(line, []byte("event:")); ok {
			name = string(bytes.TrimSpace(v))
		} else if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(v, []byte(" ")))
		}
	}
	return name, bytes.Join(data, []byte("\n"))
}

// opening returns the events to send before the first event ev, or nil when nothing is missing.
func opening(kind streamKind, ev []byte, model, id string) []byte {
	name, data := eventData(ev)
	switch kind {
	case streamAnthropic:
		return anthropicOpening(name, data, model, id)
	case streamOpenAI:
		return openAIOpening(data)
	}
	return nil
}

// anthropicMessageStart is the message_start event synthesized for a stream that lacks one.
type anthropicMessageStart struct {
	Type    string           `json:"type"`
	Message anthropicMessage `json:"message"`
}

type anthropicMessage struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Content      []any          `json:"content"`
	Model        string         `json:"model"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        anthropicUsage `json:"usage"`
}

type anthropicUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// anthropicOpening adds message_start before a first event that is not message_start (nor an
// error); content_block_start before a first content_block_delta whose block was never opened; and
// an empty text block before a first message_delta (no block at all came): the SDKs reject any
// other event before message_start and a delta for a block they never saw, and expect content.
func anthropicOpening(name string, data []byte, model, id string) []byte {
	var first struct {
		Type  string `json:"type"`
		Index *int   `json:"index"`
		Delta struct {
			Type string `json:"type"`
		} `json:"delta"`
	}
	if json.Unmarshal(data, &first) != nil {
		return nil
	}
	if first.Type == "" {
		first.Type = name
	}
	if first.Type == "message_start" || first.Type == "error" || first.Type == "" {
		return nil
	}
	start, _ := json.Marshal(anthropicMessageStart{Type: "message_start", Message: anthropicMessage{
		ID: "msg_" + id, Type: "message", Role: "assistant", Content: []any{}, Model: model,
	}})
	out := SSEEvent("message_start", start)
	if first.Type == "message_delta" {
		// The whole answer was lost with the opening (every token an incomplete UTF-8 sequence):
		// an empty text block, so that the message has the content the SDKs expect.
		out = append(out, SSEEvent("content_block_start", []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`))...)
		out = append(out, SSEEvent("content_block_stop", []byte(`{"type":"content_block_stop","index":0}`))...)
	}
	if first.Type == "content_block_delta" && first.Index != nil {
		var block string
		switch first.Delta.Type {
		case "text_delta":
			block = `{"type":"text","text":""}`
		case "thinking_delta":
			block = `{"type":"thinking","thinking":""}`
		}
		if block != "" {
			b, _ := json.Marshal(map[string]any{"type": "content_block_start", "index": *first.Index, "content_block": json.RawMessage(block)})
			out = append(out, SSEEvent("content_block_start", b)...)
		}
	}
	return out
}

// SSEEvent formats one SSE event: its name (none when "") and its data, the one way every stream
// of the router writes an event.
func SSEEvent(name string, data []byte) []byte {
	out := make([]byte, 0, len(name)+len(data)+16)
	if name != "" {
		out = append(append(append(out, "event: "...), name...), '\n')
	}
	out = append(append(out, "data: "...), data...)
	return append(out, "\n\n"...)
}

// openAIRoleChunk is the chunk that opens an OpenAI chat stream: the assistant's role and no
// content, with the identity fields of the stream's chunks.
type openAIRoleChunk struct {
	Choices           []openAIRoleChoice `json:"choices"`
	Created           json.RawMessage    `json:"created,omitempty"`
	ID                json.RawMessage    `json:"id,omitempty"`
	Model             json.RawMessage    `json:"model,omitempty"`
	SystemFingerprint json.RawMessage    `json:"system_fingerprint,omitempty"`
	Object            string             `json:"object"`
}

type openAIRoleChoice struct {
	FinishReason *string         `json:"finish_reason"`
	Index        json.RawMessage `json:"index"`
	Delta        openAIRoleDelta `json:"delta"`
}

type openAIRoleDelta struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
}

// openAIOpening adds the role chunk before a first chunk whose choices carry no role. The first
// chunk itself is left as it is; the added one copies its id, created, model and fingerprint and
// opens each of its choices.
func openAIOpening(data []byte) []byte {
	var first struct {
		Choices []struct {
			Index json.RawMessage            `json:"index"`
			Delta map[string]json.RawMessage `json:"delta"`
		} `json:"choices"`
		Created           json.RawMessage `json:"created"`
		ID                json.RawMessage `json:"id"`
		Model             json.RawMessage `json:"model"`
		SystemFingerprint json.RawMessage `json:"system_fingerprint"`
		Object            string          `json:"object"`
		Error             json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &first) != nil || first.Error != nil || len(first.Choices) == 0 {
		return nil
	}
	chunk := openAIRoleChunk{Created: first.Created, ID: first.ID, Model: first.Model,
		SystemFingerprint: first.SystemFingerprint, Object: "chat.completion.chunk"}
	for _, c := range first.Choices {
		if _, ok := c.Delta["role"]; ok {
			return nil
		}
		idx := c.Index
		if idx == nil {
			idx = json.RawMessage("0")
		}
		chunk.Choices = append(chunk.Choices, openAIRoleChoice{Index: idx, Delta: openAIRoleDelta{Role: "assistant"}})
	}
	b, _ := json.Marshal(chunk)
	return SSEEvent("", b)
}
