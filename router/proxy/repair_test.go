package proxy

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/llamatray/llamatray/router/testbed"
)

const (
	msgStart   = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"chatcmpl-1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"alpha\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":0}}}\n\n"
	blockStart = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
	textDelta  = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"\\ufffdh\"}}\n\n"
	msgEnd     = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":6}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

	synthStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_req-1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"fast\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":0,\"output_tokens\":0}}}\n\n"
	synthBlock = "event: content_block_start\ndata: {\"content_block\":{\"type\":\"text\",\"text\":\"\"},\"index\":0,\"type\":\"content_block_start\"}\n\n"

	roleChunk  = "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}],\"created\":17,\"id\":\"chatcmpl-9\",\"model\":\"alpha\",\"system_fingerprint\":\"b1\",\"object\":\"chat.completion.chunk\"}\n\n"
	firstChunk = "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":\"\\ufffdF\"}}],\"created\":17,\"id\":\"chatcmpl-9\",\"model\":\"alpha\",\"system_fingerprint\":\"b1\",\"object\":\"chat.completion.chunk\"}\n\n"
	lastChunk  = "data: {\"choices\":[{\"finish_reason\":\"length\",\"index\":0,\"delta\":{}}],\"created\":17,\"id\":\"chatcmpl-9\",\"model\":\"alpha\",\"object\":\"chat.completion.chunk\"}\n\ndata: [DONE]\n\n"
)

// Each case is a stream as a child sends it and what the client must get: the child's bytes,
// unchanged and in order, after whatever opening it left out.
func TestStreamRepair(t *testing.T) {
	cases := []struct {
		name  string
		kind  streamKind
		child string
		added string // what the repair puts in front
	}{
		{"anthropic complete", streamAnthropic, msgStart + blockStart + textDelta + msgEnd, ""},
		{"anthropic no message_start", streamAnthropic, blockStart + textDelta + msgEnd, synthStart},
		{"anthropic no message_start nor block start", streamAnthropic, textDelta + msgEnd, synthStart + synthBlock},
		{"anthropic only the end", streamAnthropic, msgEnd[strings.Index(msgEnd, "event: message_delta"):],
			synthStart + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
				"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"},
		{"anthropic ping first", streamAnthropic, "event: ping\ndata: {\"type\":\"ping\"}\n\n" + blockStart, synthStart},
		{"anthropic error first", streamAnthropic, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\n\n", ""},
		{"anthropic crlf", streamAnthropic, strings.ReplaceAll(blockStart+textDelta, "\n", "\r\n"), synthStart},
		{"anthropic comment block first", streamAnthropic, ": keep-alive\n\n" + blockStart, synthStart},
		{"anthropic data not json", streamAnthropic, "data: nope\n\n" + blockStart, ""},
		{"anthropic cut before the first event ends", streamAnthropic, "event: content_block_start\ndata: {\"type\":", ""},
		{"anthropic empty", streamAnthropic, "", ""},
		{"openai complete", streamOpenAI, roleChunk + firstChunk + lastChunk, ""},
		{"openai no role chunk", streamOpenAI, firstChunk + lastChunk, roleChunk},
		{"openai role in the first content chunk", streamOpenAI, strings.Replace(firstChunk, `"delta":{`, `"delta":{"role":"assistant",`, 1) + lastChunk, ""},
		{"openai two choices", streamOpenAI,
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}},{\"index\":1,\"delta\":{\"content\":\"b\"}}],\"id\":\"c\",\"object\":\"chat.completion.chunk\"}\n\n",
			"data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}},{\"finish_reason\":null,\"index\":1,\"delta\":{\"role\":\"assistant\",\"content\":null}}],\"id\":\"c\",\"object\":\"chat.completion.chunk\"}\n\n"},
		{"openai done only", streamOpenAI, "data: [DONE]\n\n", ""},
		{"openai error chunk", streamOpenAI, "data: {\"error\":{\"message\":\"x\",\"code\":500}}\n\n", ""},
		{"openai usage chunk without choices", streamOpenAI, "data: {\"choices\":[],\"usage\":{}}\n\n" + lastChunk, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, split := range []struct {
				name string
				wrap func(io.Reader) io.Reader
			}{{"whole", func(r io.Reader) io.Reader { return r }}, {"bytewise", iotest.OneByteReader}, {"half", iotest.HalfReader}} {
				rd := &repairReader{body: io.NopCloser(split.wrap(strings.NewReader(tc.child))),
					fix: func(ev []byte) []byte { return opening(tc.kind, ev, "fast", "req-1") }}
				got, err := io.ReadAll(rd)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != tc.added+tc.child {
					t.Fatalf("%s reads:\n got %q\nwant %q", split.name, got, tc.added+tc.child)
				}
			}
			if tc.added != "" {
				checkOpeningJSON(t, tc.added)
			}
		})
	}
}

// checkOpeningJSON checks that every added event carries valid JSON.
func checkOpeningJSON(t *testing.T, added string) {
	t.Helper()
	for _, ev := range strings.Split(strings.TrimSuffix(added, "\n\n"), "\n\n") {
		_, data := eventData([]byte(ev))
		if !json.Valid(data) {
			t.Fatalf("added event %q is not JSON", ev)
		}
	}
}

// The repair holds nothing beyond the first event: that event (with its opening) reaches the
// reader while the child has not sent the next one, and every later write passes at once.
func TestStreamRepairDoesNotBuffer(t *testing.T) {
	pr, pw := io.Pipe()
	rd := &repairReader{body: pr, fix: func(ev []byte) []byte { return opening(streamOpenAI, ev, "m", "r") }}
	br := bufio.NewReader(rd)
	go func() { _, _ = pw.Write([]byte(firstChunk)) }()
	if ev := testbed.ReadSSEEvent(t, br); !strings.Contains(ev, `"role":"assistant"`) {
		t.Fatalf("first event %q", ev)
	}
	if ev := testbed.ReadSSEEvent(t, br); ev != firstChunk {
		t.Fatalf("second event %q", ev)
	}
	for i := range 3 {
		go func() { _, _ = pw.Write([]byte(lastChunk[:len(lastChunk)-len("data: [DONE]\n\n")])) }()
		if ev := testbed.ReadSSEEvent(t, br); !strings.Contains(ev, `"length"`) {
			t.Fatalf("event %d: %q", i, ev)
		}
	}
	_ = pw.Close()
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after close: %v", err)
	}
}

func TestStreamKindOf(t *testing.T) {
	for path, want := range map[string]streamKind{
		"/v1/messages": streamAnthropic, "/v1/chat/completions": streamOpenAI, "/chat/completions": streamOpenAI,
		"/v1/completions": streamOther, "/completion": streamOther, "/v1/messages/count_tokens": streamOther,
	} {
		if got := streamKindOf(path); got != want {
			t.Errorf("%s: %d, want %d", path, got, want)
		}
	}
}
