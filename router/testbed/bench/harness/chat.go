// Package harness holds what the benchmark (router/testbed/bench) and the chaos and soak harness
// (router/testbed/chaos) share: chat requests and their checked outcome, a load client, a directly
// started llama-server, an in-process Llamatray service, process and machine facts, and percentiles.
package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Prompt is the short user message every harness request sends.
const Prompt = "Say something short."

// ChatBody is a /v1/chat/completions request body. The same seed makes the same tokens, so the
// direct server and Llamatray do the same work.
func ChatBody(model string, stream bool, maxTokens, seed int) []byte {
	b, err := json.Marshal(map[string]any{
		"model":      model,
		"stream":     stream,
		"max_tokens": maxTokens,
		"seed":       seed,
		"messages":   []map[string]string{{"role": "user", "content": Prompt}},
	})
	if err != nil {
		panic(err) // a map of strings and ints always encodes
	}
	return b
}

// NewClient is an HTTP client with enough idle connections for conns concurrent requests to one
// host, no proxy and no compression.
func NewClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * conns,
		MaxIdleConnsPerHost: 2 * conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// Request is one chat completion to send.
type Request struct {
	URL       string // full URL of /v1/chat/completions
	Body      []byte
	Stream    bool
	RequestID string // sent as X-Request-Id when set
	// Abandon makes a streamed request hang up after its first data line, like a client that
	// disconnects mid-stream.
	Abandon bool
	// Retryable marks the POST idempotent (an Idempotency-Key header), so Go's transport resends it
	// once when a kept-alive connection turns out to be closed before any answer byte came back —
	// what llama-server does after every stream. SDK clients retry those too.
	Retryable bool
}

// Result is the checked outcome of one Request.
type Result struct {
	Start      time.Time
	End        time.Time
	Status     int           // 0 when no response came
	TTFB       time.Duration // first byte of the response body; 0 if none
	FirstData  time.Duration // a stream's first data line (its first token, not a comment); 0 if none
	Latency    time.Duration // until the body was read to its end (or the request failed)
	Complete   bool          // 200 and a whole answer: data: [DONE] for a stream, a finished choice otherwise
	Abandoned  bool          // the client hung up on purpose
	Code       string        // error code of an error body ({"error":{"code":...}})
	RetryAfter string        // Retry-After header
	Err        error         // transport or read error, or why a 200 answer is incomplete
	Snippet    string        // start of an unexpected body, for reports
}

// OK reports a complete 200 answer.
func (r Result) OK() bool { return r.Complete && r.Err == nil }

var idemSeq atomic.Uint64

// Do sends r and checks what comes back. It never returns before the body is read or the
// request failed.
func Do(ctx context.Context, c *http.Client, r Request) (res Result) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res.Start = time.Now()
	defer func() {
		res.End = time.Now()
		res.Latency = res.End.Sub(res.Start)
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		res.Err = fmt.Errorf("building request: %w", err)
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	if r.RequestID != "" {
		req.Header.Set("X-Request-Id", r.RequestID)
	}
	if r.Retryable {
		req.Header.Set("Idempotency-Key", strconv.FormatUint(idemSeq.Add(1), 10))
	}
	resp, err := c.Do(req)
	if err != nil {
		res.Err = err
		return res
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	res.RetryAfter = resp.Header.Get("Retry-After")
	if resp.StatusCode != http.StatusOK {
		b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		res.TTFB = time.Since(res.Start)
		res.Code = errorCode(b)
		res.Snippet = snippet(b)
		if err != nil {
			res.Err = fmt.Errorf("reading %d error body: %w", resp.StatusCode, err)
		}
		return res
	}
	if r.Stream {
		readStream(resp.Body, r.Abandon, cancel, &res)
	} else {
		readJSON(resp.Body, &res)
	}
	return res
}

// readStream reads an SSE answer line by line; complete once `data: [DONE]` arrived.
func readStream(body io.Reader, abandon bool, cancel context.CancelFunc, res *Result) {
	rd := bufio.NewReaderSize(body, 16<<10)
	sawData := false
	for {
		line, err := rd.ReadSlice('\n')
		if len(line) > 0 && res.TTFB == 0 {
			res.TTFB = time.Since(res.Start)
		}
		t := bytes.TrimSpace(line)
		if bytes.HasPrefix(t, []byte("data:")) {
			payload := bytes.TrimSpace(t[len("data:"):])
			if bytes.Equal(payload, []byte("[DONE]")) {
				res.Complete = true
				// Read to the end so the connection can be reused when the server keeps it.
				_, _ = io.Copy(io.Discard, rd)
				return
			}
			if bytes.HasPrefix(payload, []byte(`{"error"`)) {
				res.Code = errorCode(payload)
				res.Snippet = snippet(payload)
			}
			if !sawData {
				res.FirstData = time.Since(res.Start)
			}
			sawData = true
			if abandon {
				res.Abandoned = true
				cancel()
				return
			}
		}
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			res.Err = fmt.Errorf("stream ended without [DONE] (data seen: %v): %w", sawData, err)
			return
		}
	}
}

// readJSON reads a whole chat completion; complete when its first choice has a finish_reason.
func readJSON(body io.Reader, res *Result) {
	b, err := io.ReadAll(body)
	if len(b) > 0 {
		res.TTFB = time.Since(res.Start) // whole body at once: the first byte is as late as the last
	}
	if err != nil {
		res.Err = fmt.Errorf("reading body after %d bytes: %w", len(b), err)
		return
	}
	var doc struct {
		Choices []struct {
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		res.Err = fmt.Errorf("answer is not JSON: %w", err)
		res.Snippet = snippet(b)
		return
	}
	if len(doc.Choices) == 0 || doc.Choices[0].FinishReason == nil {
		res.Err = errors.New("answer has no finished choice")
		res.Snippet = snippet(b)
		return
	}
	res.Complete = true
}

// errorCode extracts error.code from an OpenAI-shaped error body (a string or a number).
func errorCode(b []byte) string {
	var doc struct {
		Error struct {
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(bytes.TrimSpace(b), &doc) != nil || len(doc.Error.Code) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(doc.Error.Code, &s) == nil {
		return s
	}
	return string(doc.Error.Code)
}

// snippet is the start of an unexpected body, for reports.
func snippet(b []byte) string {
	// One line of text: an error page's markup would turn into markup in a markdown report.
	s := strings.Join(strings.Fields(htmlTag.ReplaceAllString(string(b), " ")), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// htmlTag is one tag of an HTML error page (a proxy's 502, say).
var htmlTag = regexp.MustCompile(`<[/!]?[a-zA-Z][^<>]*>`)
