package app

// The request behind Try it: one streamed chat completion through the router's endpoint, as any
// client sends it, read as it comes.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// tryRequest is one streamed chat completion through the router.
type tryRequest struct {
	base, key, model string
	messages         []chatMessage // the conversation, the prompt last
}

// tryEvent is one thing the stream said: a comment (why it waits) or a piece of the answer.
type tryEvent struct {
	comment string
	delta   string
	elapsed time.Duration // since the request was sent
}

// tryResult is what a finished stream measured.
type tryResult struct {
	firstToken      time.Duration // from sending to the first piece of the answer; 0 when none came
	total           time.Duration
	tokens          int     // generated, from llama-server's timings (else the pieces received)
	tokensPerSecond float64 // from llama-server's timings (else measured)
	promptTokens    int
}

// summary is the line shown when the answer is complete.
func (r tryResult) summary() string {
	if r.firstToken == 0 {
		return "No answer came."
	}
	return fmt.Sprintf("First token after %s · %.1f tokens/s · %d tokens in %s (prompt %d tokens)",
		millis(float64(r.firstToken)/float64(time.Millisecond)), r.tokensPerSecond, r.tokens,
		millis(float64(r.total)/float64(time.Millisecond)), r.promptTokens)
}

// tryChunk is the part of an OpenAI stream chunk read here.
type tryChunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Timings *struct {
		PromptN            int     `json:"prompt_n"`
		CacheN             int     `json:"cache_n"`
		PredictedN         int     `json:"predicted_n"`
		PredictedPerSecond float64 `json:"predicted_per_second"`
	} `json:"timings"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// run posts the conversation with stream on and reads the answer as it comes, calling on for every
// comment and piece of text.
func (r tryRequest) run(ctx context.Context, on func(tryEvent)) (tryResult, error) {
	resp, sent, err := r.send(ctx)
	if err != nil {
		return tryResult{}, err
	}
	defer resp.Body.Close()
	st := tryStream{sent: sent, on: on}
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if err := st.line(strings.TrimRight(line, "\r\n")); err != nil {
			return st.res, err
		}
		if err != nil {
			st.end()
			if errors.Is(err, io.EOF) {
				return st.res, nil
			}
			if ctx.Err() != nil {
				return st.res, ctx.Err()
			}
			return st.res, err
		}
	}
}

// send posts the request for a streamed answer. An answer other than 200 is an error with the
// router's message.
func (r tryRequest) send(ctx context.Context) (*http.Response, time.Time, error) {
	body, _ := json.Marshal(map[string]any{
		"model": r.model, "stream": true,
		"messages": r.messages,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, time.Time{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if r.key != "" {
		req.Header.Set("Authorization", "Bearer "+r.key)
	}
	sent := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, sent, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, sent, fmt.Errorf("the router answered %d: %s", resp.StatusCode, errorMessage(raw))
	}
	return resp, sent, nil
}

// tryStream reads an answer's server-sent events, sent at sent: its pieces and comments go to on,
// its timings to res.
type tryStream struct {
	sent   time.Time
	on     func(tryEvent)
	res    tryResult
	pieces int // the pieces of text received
}

// line takes one line of the stream; an error event ends the answer with its message.
func (s *tryStream) line(line string) error {
	switch {
	case strings.HasPrefix(line, ":"):
		if c := strings.TrimSpace(line[1:]); c != "" {
			s.on(tryEvent{comment: c, elapsed: time.Since(s.sent)})
		}
	case strings.HasPrefix(line, "data:"):
		data := strings.TrimSpace(line[len("data:"):])
		var ch tryChunk
		if data == "[DONE]" || json.Unmarshal([]byte(data), &ch) != nil {
			return nil
		}
		if ch.Error != nil {
			return errors.New(ch.Error.Message)
		}
		for _, c := range ch.Choices {
			if c.Delta.Content == "" {
				continue
			}
			if s.res.firstToken == 0 {
				s.res.firstToken = time.Since(s.sent)
			}
			s.pieces++
			s.on(tryEvent{delta: c.Delta.Content, elapsed: time.Since(s.sent)})
		}
		if tm := ch.Timings; tm != nil {
			s.res.tokens, s.res.tokensPerSecond, s.res.promptTokens = tm.PredictedN, tm.PredictedPerSecond, tm.PromptN+tm.CacheN
		}
	}
	return nil
}

// end completes the result as the stream ends: its time, and without the server's timings, the
// tokens counted as the pieces received and their speed.
func (s *tryStream) end() {
	s.res.total = time.Since(s.sent)
	if s.res.tokens == 0 {
		s.res.tokens = s.pieces
		if gen := s.res.total - s.res.firstToken; s.res.firstToken > 0 && gen > 0 {
			s.res.tokensPerSecond = float64(s.pieces) / gen.Seconds()
		}
	}
}

// errorMessage is the message of an error document, else its text.
func errorMessage(raw []byte) string {
	var doc struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &doc) == nil && doc.Error.Message != "" {
		return doc.Error.Message
	}
	return strings.TrimSpace(string(raw))
}
