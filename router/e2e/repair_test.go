package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
)

// sdkStreams is how many streams each repair test makes: llama-server 0.7.0 with a random-weight
// model leaves out a stream's opening in about one of seven, so 100 streams hit it many times.
const sdkStreams = 100

// 100 streams through the official Anthropic Go SDK all open with message_start (the JS and Python
// SDKs' messages.stream() fail without it) and accumulate into an assistant message with an ID.
func TestAnthropicSDKStreamsAlwaysStart(t *testing.T) {
	in := start(t, []string{"alpha"}, nil)
	client := anthropic.NewClient(aoption.WithBaseURL(in.base+"/"), aoption.WithAPIKey("unused"), aoption.WithMaxRetries(0))
	ctx := context.Background()
	synthesized := 0
	for i := range sdkStreams {
		stream := client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
			Model:     "alpha",
			MaxTokens: 6,
			Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
		})
		var msg anthropic.Message
		var types []string
		for stream.Next() {
			ev := stream.Current()
			types = append(types, ev.Type)
			if err := msg.Accumulate(ev); err != nil {
				t.Fatalf("stream %d: accumulate %s: %v", i, ev.Type, err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		if len(types) < 3 || types[0] != "message_start" || types[len(types)-1] != "message_stop" {
			t.Fatalf("stream %d: events %v", i, types)
		}
		if msg.Role != "assistant" || msg.ID == "" || len(msg.Content) != 1 {
			t.Fatalf("stream %d: events %v, message %+v", i, types, msg)
		}
		if strings.HasPrefix(msg.ID, "msg_") {
			synthesized++
		}
	}
	t.Logf("%d of %d streams lacked message_start from llama-server and were repaired", synthesized, sdkStreams)
}

// 100 OpenAI chat streams: each one's first chunk carries "role":"assistant", and exactly one does.
func TestOpenAIStreamsCarryRole(t *testing.T) {
	in := start(t, []string{"alpha"}, nil)
	for i := range sdkStreams {
		resp, err := http.Post(in.base+"/v1/chat/completions", "application/json", bytes.NewReader(chatBody("alpha", true, 4)))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		var chunks []string
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				chunks = append(chunks, data)
			}
		}
		resp.Body.Close()
		if len(chunks) < 3 || chunks[len(chunks)-1] != "[DONE]" {
			t.Fatalf("stream %d: %q", i, chunks)
		}
		roles := 0
		for j, c := range chunks[:len(chunks)-1] {
			var ch struct {
				Choices []struct {
					Delta map[string]any `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(c), &ch); err != nil || len(ch.Choices) != 1 {
				t.Fatalf("stream %d chunk %d: %q %v", i, j, c, err)
			}
			if role, ok := ch.Choices[0].Delta["role"]; ok {
				roles++
				if j != 0 || role != "assistant" {
					t.Fatalf("stream %d: role %v in chunk %d", i, role, j)
				}
			}
		}
		if roles != 1 {
			t.Fatalf("stream %d: %d chunks with a role: %q", i, roles, chunks)
		}
	}
}
