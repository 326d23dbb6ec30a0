package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/wire"
)

// TestActivityFromTheFakeLlamaServer sends a stream, a JSON answer, an answer without timings
// and a request that times out in the queue, and reads /api/activity: the counts come from the
// timings the fake llama-server sends, and the stream still arrives token by token.
func TestActivityFromTheFakeLlamaServer(t *testing.T) {
	fake, _ := startFakeLlama(t, "", "FAKE_LLAMA_TOKENS=12", "FAKE_LLAMA_TOKEN_DELAY=5ms")
	srv, fe, _ := testRouter(t, fake, nil)
	fe.mu.Lock()
	fe.acquire = func(ctx context.Context, id string) (*engine.Lease, error) {
		return fe.lease(id, 40*time.Millisecond), nil
	}
	fe.mu.Unlock()

	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"fast","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	events := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			events++
		}
	}
	resp.Body.Close()
	if events < 12 {
		t.Fatalf("%d events in the stream", events)
	}

	for _, body := range []string{
		`{"model":"m1","messages":[{"role":"user","content":"hello there"}]}`,
		`{"model":"m1","content":"hello"}`, // /tokenize: no timings
	} {
		path := "/v1/chat/completions"
		if strings.Contains(body, `"content":"hello"}`) {
			path = "/tokenize"
		}
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
	fe.mu.Lock()
	fe.acquire = func(ctx context.Context, id string) (*engine.Lease, error) {
		return nil, &engine.QueueTimeoutError{Model: id, Waited: time.Second}
	}
	fe.mu.Unlock()
	resp, err = http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m1","messages":[{"role":"user","content":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitReleased(t, fe, 3)

	resp, err = http.Get(srv.URL + "/api/activity")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc wire.Activity
	dec := json.NewDecoder(resp.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Models) != 1 || doc.Models[0].Model != "m1" || len(doc.Models[0].Buckets) != 60 || doc.BucketSeconds != 60 {
		t.Fatalf("activity %+v", doc)
	}
	tot := doc.Models[0].Total
	if tot.Requests != 4 || tot.Errors != 1 {
		t.Fatalf("requests %d errors %d", tot.Requests, tot.Errors)
	}
	// The stream made 12 tokens, the JSON answer the fake's default; both reported their prompts.
	if tot.TokensOut < 13 || tot.TokensIn < 2 {
		t.Fatalf("tokens in %d out %d", tot.TokensIn, tot.TokensOut)
	}
	if tot.TTFTMs < 40 || tot.TokensPerSecond <= 0 || tot.QueueWaitMs < 30 || tot.MaxQueueWaitMs < 40 {
		t.Fatalf("timings %+v", tot)
	}
	last := doc.Models[0].Buckets[59]
	if last.Requests+doc.Models[0].Buckets[58].Requests != 4 {
		t.Fatalf("the requests are not in the last buckets: %+v", last)
	}
}

// TestActivityKeepsNoText checks that the document holds no part of a prompt or an answer.
func TestActivityKeepsNoText(t *testing.T) {
	fake, _ := startFakeLlama(t, "", "FAKE_LLAMA_TOKENS=4")
	srv, _, server := testRouter(t, fake, nil)
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m1","messages":[{"role":"user","content":"secret-prompt-words"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var a struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if err := json.Unmarshal(answer, &a); err != nil || len(a.Choices) == 0 {
		t.Fatalf("answer %s: %v", answer, errors.Join(err))
	}
	b, _ := json.Marshal(server.o.Activity.Snapshot())
	if strings.Contains(string(b), "secret-prompt-words") || strings.Contains(string(b), a.Choices[0].Message.Content) {
		t.Fatalf("activity keeps text: %s", b)
	}
}
