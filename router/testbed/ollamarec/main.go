// Command ollamarec records a running Ollama's answers into router/testbed/testdata/ollama: one file
// per exchange (the body exactly as sent, streams as their raw NDJSON lines), an index
// exchanges.json with each file's request, status and Content-Type, and copy.json, delete.json,
// runner-error.json and errors.json, which hold several exchanges each. The models must exist
// already (the README there has the commands); -gguf DIR writes two of them first (tiny.gguf,
// tiny-embed.gguf; see model.go) and exits.
//
//	go run ./router/testbed/ollamarec -gguf /tmp
//	go run ./router/testbed/ollamarec -url http://127.0.0.1:11500 -model tiny -embed-model tiny-embed \
//	    -raw-model tiny-raw -shorten /tmp/ollstore=/models -out router/testbed/testdata/ollama
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ollamarec:", err)
		os.Exit(1)
	}
}

// shortenFlag holds OLD=NEW replacements, applied to every recorded body in the order given.
type shortenFlag []string

func (s *shortenFlag) String() string { return strings.Join(*s, ",") }

func (s *shortenFlag) Set(v string) error {
	if !strings.Contains(v, "=") {
		return errors.New("want OLD=NEW")
	}
	*s = append(*s, v)
	return nil
}

// answer is one recorded exchange.
type answer struct {
	File        string          `json:"file,omitempty"`
	Request     string          `json:"request"`
	RequestBody json.RawMessage `json:"request_body,omitempty"`
	RawRequest  string          `json:"raw_request_body,omitempty"` // a body that is not JSON
	Status      int             `json:"status,omitempty"`
	ContentType string          `json:"content_type,omitempty"`
	Chunked     bool            `json:"chunked,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`      // one JSON value (compound files only)
	BodyText    *string         `json:"body_text,omitempty"` // anything else (compound files only)
	raw         []byte
}

type recorder struct {
	base    string
	out     string
	shorten shortenFlag
	client  *http.Client
	index   []answer
	edits   map[string]int // file → replacements made by -shorten
}

// do sends one request; body is marshalled unless it is a string, which is sent as it is.
func (r *recorder) do(method, path string, body any) (answer, error) {
	a := answer{Request: method + " " + path}
	var rd io.Reader
	if body != nil {
		var b []byte
		if s, ok := body.(string); ok {
			b = []byte(s)
			if json.Valid(b) {
				a.RequestBody = b
			} else {
				a.RawRequest = s
			}
		} else {
			var err error
			if b, err = json.Marshal(body); err != nil {
				return a, err
			}
			a.RequestBody = b
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.base+path, rd)
	if err != nil {
		return a, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return a, err
	}
	a.Status = resp.StatusCode
	a.ContentType = resp.Header.Get("Content-Type")
	a.Chunked = len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
	a.raw = raw
	fmt.Fprintf(os.Stderr, "%s → %d %s (%d bytes)\n", a.Request, a.Status, a.ContentType, len(raw))
	return a, nil
}

// short applies the -shorten replacements, counting them under name.
func (r *recorder) short(name string, b []byte) []byte {
	for _, kv := range r.shorten {
		old, repl, _ := strings.Cut(kv, "=")
		if n := bytes.Count(b, []byte(old)); n > 0 {
			r.edits[name] += n
			b = bytes.ReplaceAll(b, []byte(old), []byte(repl))
		}
	}
	return b
}

// file records one exchange as its own file, the body as sent (shortened).
func (r *recorder) file(name, method, path string, body any) error {
	a, err := r.do(method, path, body)
	if err != nil {
		return err
	}
	a.File = name
	if name != "" {
		if err := os.WriteFile(filepath.Join(r.out, name), r.short(name, a.raw), 0o644); err != nil {
			return err
		}
	}
	a.RequestBody = r.short("exchanges.json", a.RequestBody)
	r.index = append(r.index, a)
	return nil
}

// embed returns a with its body inside (a JSON value as it is, anything else as text).
func (r *recorder) embed(name string, a answer) answer {
	b := r.short(name, a.raw)
	if len(bytes.TrimSpace(b)) > 0 && json.Valid(b) {
		a.Body = b
	} else {
		s := string(b) // "" for an empty body
		a.BodyText = &s
	}
	return a
}

// step is one exchange of a compound file.
type step struct {
	key          string
	method, path string
	body         any
}

// compound records several exchanges into one JSON object, key → exchange; keys keep their order.
func (r *recorder) compound(name string, steps []step) error {
	var buf bytes.Buffer
	buf.WriteString("{")
	for i, s := range steps {
		a, err := r.do(s.method, s.path, s.body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", name, s.key, err)
		}
		a = r.embed(name, a)
		a.RequestBody = r.short(name, a.RequestBody)
		v, err := json.Marshal(a)
		if err != nil {
			return err
		}
		k, _ := json.Marshal(s.key)
		if i > 0 {
			buf.WriteString(",")
		}
		buf.Write(k)
		buf.WriteString(":")
		buf.Write(v)
	}
	buf.WriteString("}")
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", " "); err != nil {
		return err
	}
	out.WriteString("\n")
	r.index = append(r.index, answer{File: name, Request: "(several, see the file)"})
	return os.WriteFile(filepath.Join(r.out, name), out.Bytes(), 0o644)
}

func run(args []string) error {
	fs := flag.NewFlagSet("ollamarec", flag.ContinueOnError)
	base := fs.String("url", "http://127.0.0.1:11500", "Ollama's address (loopback)")
	model := fs.String("model", "tiny", "the model to talk to")
	embedModel := fs.String("embed-model", "tiny-embed", "the embedding model")
	rawModel := fs.String("raw-model", "tiny-raw", "a model whose generations fail in llama-server (empty: skip)")
	gguf := fs.String("gguf", "", "write the models into this folder and exit")
	out := fs.String("out", "router/testbed/testdata/ollama", "folder to write into")
	r := &recorder{client: &http.Client{Timeout: 5 * time.Minute}, edits: map[string]int{}}
	fs.Var(&r.shorten, "shorten", "OLD=NEW replacement in every recorded body (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *gguf != "" {
		return writeModels(*gguf)
	}
	r.base, r.out = strings.TrimRight(*base, "/"), *out
	if err := os.MkdirAll(r.out, 0o755); err != nil {
		return err
	}
	m, em := *model, *embedModel
	opts := map[string]any{"seed": 1, "num_predict": 8, "temperature": 0}
	q := "Why is the sky blue?"
	user := []map[string]any{{"role": "user", "content": q}}
	no := false
	tools := []map[string]any{{
		"type": "function",
		"function": map[string]any{
			"name":        "get_weather",
			"description": "Get the current weather in a city",
			"parameters": map[string]any{
				"type":       "object",
				"required":   []string{"city"},
				"properties": map[string]any{"city": map[string]any{"type": "string", "description": "the city"}},
			},
		},
	}}
	schema := map[string]any{
		"type":       "object",
		"properties": map[string]any{"color": map[string]any{"type": "string"}},
		"required":   []string{"color"},
	}

	files := []struct {
		name, method, path string
		body               any
	}{
		{"root.txt", "GET", "/", nil},
		{"", "HEAD", "/", nil},
		{"version.json", "GET", "/api/version", nil},
		{"status.json", "GET", "/api/status", nil},
		{"tags.json", "GET", "/api/tags", nil},
		{"show.json", "POST", "/api/show", map[string]any{"model": m}},
		{"show-verbose.json", "POST", "/api/show", map[string]any{"model": m, "verbose": true}},
		{"ps-empty.json", "GET", "/api/ps", nil},
		{"generate-load.json", "POST", "/api/generate", map[string]any{"model": m}},
		{"ps.json", "GET", "/api/ps", nil},
		{"generate.ndjson", "POST", "/api/generate", map[string]any{"model": m, "prompt": q, "options": opts}},
		{"generate-nostream.json", "POST", "/api/generate", map[string]any{"model": m, "prompt": q, "stream": no, "options": opts}},
		{"chat-load.json", "POST", "/api/chat", map[string]any{"model": m, "messages": []any{}}},
		{"chat.ndjson", "POST", "/api/chat", map[string]any{"model": m, "messages": user, "options": opts}},
		{"chat-nostream.json", "POST", "/api/chat", map[string]any{"model": m, "messages": user, "stream": no, "options": opts}},
		{"chat-format-json.json", "POST", "/api/chat", map[string]any{"model": m, "messages": user, "stream": no, "format": "json", "options": opts}},
		{"chat-format-schema.json", "POST", "/api/chat", map[string]any{"model": m, "messages": user, "stream": no, "format": schema, "options": opts}},
		{"chat-tools.json", "POST", "/api/chat", map[string]any{"model": m, "messages": []map[string]any{{"role": "user", "content": "What is the weather in Paris?"}}, "stream": no, "tools": tools, "options": opts}},
		{"chat-tools.ndjson", "POST", "/api/chat", map[string]any{"model": m, "messages": []map[string]any{{"role": "user", "content": "What is the weather in Paris?"}}, "tools": tools, "options": opts}},
		{"generate-unload.json", "POST", "/api/generate", map[string]any{"model": m, "keep_alive": 0}},
		{"ps-unloaded.json", "GET", "/api/ps", nil},
		{"show-embed.json", "POST", "/api/show", map[string]any{"model": em}},
		{"embed.json", "POST", "/api/embed", map[string]any{"model": em, "input": []string{q, "Hello"}}},
		{"embed-single.json", "POST", "/api/embed", map[string]any{"model": em, "input": q}},
		{"embeddings.json", "POST", "/api/embeddings", map[string]any{"model": em, "prompt": q}},
		{"ps-embed.json", "GET", "/api/ps", nil},
		{"embed-unload.json", "POST", "/api/embed", map[string]any{"model": em, "keep_alive": 0}},
		{"create.ndjson", "POST", "/api/create", map[string]any{"model": m + "3", "from": m, "system": "You are another tiny test model."}},
	}
	for _, f := range files {
		if err := r.file(f.name, f.method, f.path, f.body); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	if err := r.compound("copy.json", []step{
		{"copy", "POST", "/api/copy", map[string]any{"source": m, "destination": m + "-copy"}},
		{"tags", "GET", "/api/tags", nil},
	}); err != nil {
		return err
	}
	if err := r.compound("delete.json", []step{
		{"delete", "DELETE", "/api/delete", map[string]any{"model": m + "-copy"}},
		{"delete_created", "DELETE", "/api/delete", map[string]any{"model": m + "3"}},
		{"tags", "GET", "/api/tags", nil},
	}); err != nil {
		return err
	}
	if *rawModel != "" {
		raw := *rawModel
		if err := r.compound("runner-error.json", []step{
			{"generate_stream", "POST", "/api/generate", map[string]any{"model": raw, "prompt": q, "options": opts}},
			{"generate_nostream", "POST", "/api/generate", map[string]any{"model": raw, "prompt": q, "stream": no, "options": opts}},
			{"chat_stream", "POST", "/api/chat", map[string]any{"model": raw, "messages": user, "options": opts}},
			{"chat_nostream", "POST", "/api/chat", map[string]any{"model": raw, "messages": user, "stream": no, "options": opts}},
			{"unload", "POST", "/api/generate", map[string]any{"model": raw, "keep_alive": 0}},
		}); err != nil {
			return err
		}
	}
	if err := r.compound("errors.json", []step{
		{"chat_unknown_model", "POST", "/api/chat", map[string]any{"model": "nope", "messages": user}},
		{"generate_unknown_model", "POST", "/api/generate", map[string]any{"model": "nope", "prompt": q}},
		{"embed_unknown_model", "POST", "/api/embed", map[string]any{"model": "nope", "input": q}},
		{"show_unknown", "POST", "/api/show", map[string]any{"model": "nope"}},
		{"generate_no_model", "POST", "/api/generate", map[string]any{"prompt": q}},
		{"chat_no_model", "POST", "/api/chat", map[string]any{"messages": user}},
		{"malformed_json", "POST", "/api/chat", `{"model":`},
		{"empty_body", "POST", "/api/generate", ""},
		{"option_wrong_type", "POST", "/api/generate", map[string]any{"model": m, "prompt": q, "stream": no, "options": map[string]any{"num_predict": "eight"}}},
		{"embed_completion_model", "POST", "/api/embed", map[string]any{"model": m, "input": q}},
		{"embeddings_completion_model", "POST", "/api/embeddings", map[string]any{"model": m, "prompt": q}},
		{"generate_embedding_model", "POST", "/api/generate", map[string]any{"model": em, "prompt": q, "stream": no}},
		{"chat_embedding_model", "POST", "/api/chat", map[string]any{"model": em, "messages": user, "stream": no}},
		{"think_unsupported", "POST", "/api/chat", map[string]any{"model": m, "messages": user, "stream": no, "think": true, "options": opts}},
		{"delete_unknown", "DELETE", "/api/delete", map[string]any{"model": "nope"}},
		{"copy_unknown", "POST", "/api/copy", map[string]any{"source": "nope", "destination": "nope2"}},
		{"create_from_unknown", "POST", "/api/create", map[string]any{"model": "bad", "from": "nope", "stream": no}},
		{"pull_unreachable", "POST", "/api/pull", map[string]any{"model": "nope-unreachable"}},
		{"pull_unreachable_nostream", "POST", "/api/pull", map[string]any{"model": "nope-unreachable", "stream": no}},
		{"push", "POST", "/api/push", map[string]any{"model": m}},
		{"push_nostream", "POST", "/api/push", map[string]any{"model": m, "stream": no}},
		{"method_not_allowed", "GET", "/api/chat", nil},
		{"unknown_path", "GET", "/api/nope", nil},
	}); err != nil {
		return err
	}
	idx, err := json.MarshalIndent(r.index, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.out, "exchanges.json"), append(idx, '\n'), 0o644); err != nil {
		return err
	}
	for name, n := range r.edits {
		fmt.Fprintf(os.Stderr, "shortened: %s ×%d\n", name, n)
	}
	return nil
}
