package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
)

// The official OpenAI Go SDK talks to Llamatray as to OpenAI: list models, chat, streamed chat.
func TestOpenAISDK(t *testing.T) {
	in := start(t, []string{"alpha", "beta"}, nil)
	client := openai.NewClient(option.WithBaseURL(in.base+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ctx := context.Background()

	page, err := client.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		if m.Object != "model" || m.OwnedBy != "llamatray" {
			t.Errorf("model entry %+v", m)
		}
	}
	if strings.Join(ids, ",") != "alpha,beta" {
		t.Fatalf("models %v", ids)
	}

	params := openai.ChatCompletionNewParams{
		Model:     "alpha",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
		MaxTokens: openai.Int(8),
	}
	resp, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || resp.Usage.CompletionTokens == 0 {
		t.Fatalf("chat %+v", resp)
	}

	stream := client.Chat.Completions.NewStreaming(ctx, params)
	chunks := 0
	for stream.Next() {
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 2 {
		t.Fatalf("%d chunks", chunks)
	}
}
