package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Through the router and the fake llama-server leaving out every stream's opening: the client gets
// message_start first and a role chunk first, naming the model's ID as the child's own events do
// (the client asked for the alias); a child that sends them gets nothing added.
func TestStreamRepairThroughFakeLlamaServer(t *testing.T) {
	for _, drop := range []bool{true, false} {
		env := []string{"FAKE_LLAMA_TOKENS=4"}
		if drop {
			env = append(env, "FAKE_LLAMA_DROP_OPENING=1")
		}
		fake, _ := startFakeLlama(t, "", env...)
		srv, fe, _ := testRouter(t, fake, nil)

		resp, err := http.Post(srv.URL+"/v1/messages", "application/json",
			strings.NewReader(`{"model":"fast","stream":true,"max_tokens":4,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		types := eventTypes(t, body)
		if types[0] != "message_start" || types[1] != "content_block_start" || types[len(types)-1] != "message_stop" ||
			strings.Count(string(body), "event: message_start") != 1 {
			t.Fatalf("drop %v: events %v", drop, types)
		}
		var start struct {
			Message struct{ ID, Role, Model string }
		}
		data := firstData(body)
		if err := json.Unmarshal(data, &start); err != nil || start.Message.Role != "assistant" || start.Message.ID == "" || drop && start.Message.Model != "m1" {
			t.Fatalf("drop %v: message_start %s", drop, data)
		}

		resp, err = http.Post(srv.URL+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"m1","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if n := bytes.Count(body, []byte(`"role":"assistant"`)); n != 1 {
			t.Fatalf("drop %v: %d role fields in %s", drop, n, body)
		}
		data = firstData(body)
		if !bytes.Contains(data, []byte(`"role":"assistant"`)) || !bytes.HasSuffix(body, []byte("data: [DONE]\n\n")) {
			t.Fatalf("drop %v: first chunk %s", drop, data)
		}
		waitReleased(t, fe, 2)
	}
}

// eventTypes lists the "type" of every data line of an SSE body.
func eventTypes(t *testing.T, body []byte) []string {
	t.Helper()
	var types []string
	for _, line := range strings.Split(string(body), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var ev struct{ Type string }
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			types = append(types, ev.Type)
		}
	}
	if len(types) < 2 {
		t.Fatalf("events %v in %q", types, body)
	}
	return types
}

// firstData is the data line of an SSE body's first event.
func firstData(body []byte) []byte {
	ev, _, _ := bytes.Cut(body, []byte("\n\n"))
	for line := range bytes.SplitSeq(ev, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			return d
		}
	}
	return nil
}
