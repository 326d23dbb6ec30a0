package testbed_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/testbed"
)

// TestFakeEndpoints checks the shape of every endpoint on one fake.
func TestFakeEndpoints(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOpts{args: []string{"--alias", "m1", "-np", "2", "-c", "2048"}, sidecar: `{"tokens": 4, "token_delay": "1ms"}`})
	p.waitReady()
	type obj = map[string]any
	get := func(t *testing.T, method, path, body string) obj {
		t.Helper()
		var out obj
		if code := p.call(method, path, body, &out); code != 200 {
			t.Fatalf("%s %s = %d %v", method, path, code, out)
		}
		return out
	}
	chat := `{"model":"m1","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi"}]}]}`

	t.Run("models", func(t *testing.T) {
		for _, path := range []string{"/v1/models", "/models"} {
			data := get(t, "GET", path, "")["data"].([]any)
			if len(data) != 1 || data[0].(obj)["id"] != "m1" || data[0].(obj)["owned_by"] != "llamacpp" {
				t.Errorf("%s data = %v", path, data)
			}
		}
	})
	t.Run("props", func(t *testing.T) {
		props := get(t, "GET", "/props", "")
		if props["total_slots"] != 2.0 || props["model_path"] != p.model || props["is_sleeping"] != false {
			t.Errorf("props = %v", props)
		}
		if settings := props["default_generation_settings"].(obj); settings["n_ctx"] != 1024.0 {
			t.Errorf("per-slot n_ctx = %v, want 2048/2", settings["n_ctx"])
		}
	})
	t.Run("chat", func(t *testing.T) {
		res := get(t, "POST", "/chat/completions", chat)
		msg := res["choices"].([]any)[0].(obj)["message"].(obj)
		if msg["role"] != "assistant" || msg["content"] != " The quick brown fox" || res["object"] != "chat.completion" {
			t.Errorf("chat = %v", res)
		}
		if usage := res["usage"].(obj); usage["completion_tokens"] != 4.0 || usage["prompt_tokens"].(float64) <= 0 {
			t.Errorf("usage = %v", usage)
		}
		capped := get(t, "POST", "/v1/chat/completions", `{"max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`)
		if c := capped["choices"].([]any)[0].(obj); c["finish_reason"] != "length" || c["message"].(obj)["content"] != " The quick" {
			t.Errorf("max_tokens 2 gave %v", c)
		}
	})
	t.Run("completions", func(t *testing.T) {
		oai := get(t, "POST", "/v1/completions", `{"prompt":"once"}`)
		if oai["choices"].([]any)[0].(obj)["text"] != " The quick brown fox" || oai["object"] != "text_completion" {
			t.Errorf("/v1/completions = %v", oai)
		}
		for _, path := range []string{"/completion", "/completions", "/infill"} {
			res := get(t, "POST", path, `{"prompt":"once","input_prefix":"a","input_suffix":"b"}`)
			if res["content"] != " The quick brown fox" || res["stop"] != true || res["tokens_predicted"] != 4.0 {
				t.Errorf("%s = %v", path, res)
			}
		}
	})
	t.Run("native stream has no DONE", func(t *testing.T) {
		lines := sseData(t, p.url+"/completion", `{"prompt":"x","stream":true}`)
		if len(lines) != 5 || strings.Contains(lines[4], "[DONE]") || !strings.Contains(lines[4], `"stop":true`) {
			t.Errorf("stream = %q", lines)
		}
	})
	t.Run("embeddings", func(t *testing.T) {
		vec := func(input string) []any {
			res := get(t, "POST", "/v1/embeddings", `{"input":`+input+`}`)
			return res["data"].([]any)[0].(obj)["embedding"].([]any)
		}
		a, b, c := vec(`"alpha"`), vec(`["alpha","beta"]`), vec(`"beta"`)
		if len(a) != 16 || !reflect.DeepEqual(a, b) || reflect.DeepEqual(a, c) {
			t.Errorf("embeddings not deterministic per input: %v %v %v", a, b, c)
		}
		var native []obj
		p.call("POST", "/embedding", `{"content":"alpha"}`, &native)
		if len(native) != 1 || !reflect.DeepEqual(native[0]["embedding"].([]any)[0], a) {
			t.Errorf("/embedding = %v, want the same vector as /v1/embeddings", native)
		}
	})
	t.Run("tokenize round trip", func(t *testing.T) {
		toks := get(t, "POST", "/tokenize", `{"content":"Hello, llama!"}`)["tokens"]
		body, _ := json.Marshal(obj{"tokens": toks})
		if got := get(t, "POST", "/detokenize", string(body))["content"]; got != "Hello, llama!" {
			t.Errorf("detokenize(tokenize(x)) = %q", got)
		}
		pieces := get(t, "POST", "/tokenize", `{"content":"Hello","with_pieces":true}`)["tokens"].([]any)
		if pieces[0].(obj)["piece"] != "Hell" {
			t.Errorf("pieces = %v", pieces)
		}
	})
	t.Run("apply-template", func(t *testing.T) {
		prompt := get(t, "POST", "/apply-template", chat)["prompt"].(string)
		if !strings.Contains(prompt, "<|im_start|>user\nhi<|im_end|>") || !strings.HasSuffix(prompt, "<|im_start|>assistant\n") {
			t.Errorf("prompt = %q", prompt)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		body := `{"model":"m1","max_tokens":100,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`
		res := get(t, "POST", "/v1/messages", body)
		if res["type"] != "message" || res["stop_reason"] != "end_turn" || res["content"].([]any)[0].(obj)["text"] != " The quick brown fox" {
			t.Errorf("/v1/messages = %v", res)
		}
		if n := get(t, "POST", "/v1/messages/count_tokens", body)["input_tokens"].(float64); n <= 0 {
			t.Errorf("input_tokens = %v", n)
		}
		req, _ := http.NewRequest("POST", p.url+"/v1/messages", strings.NewReader(strings.Replace(body, `"model"`, `"stream":true,"model"`, 1)))
		res2, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res2.Body.Close()
		var events []string
		sc := bufio.NewScanner(res2.Body)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				events = append(events, name)
			}
		}
		want := "message_start,content_block_start,content_block_delta,content_block_delta,content_block_delta,content_block_delta,content_block_stop,message_delta,message_stop"
		if got := strings.Join(events, ","); got != want {
			t.Errorf("events = %s", got)
		}
	})
	t.Run("responses", func(t *testing.T) {
		res := get(t, "POST", "/v1/responses", `{"input":"hi"}`)
		out := res["output"].([]any)[0].(obj)["content"].([]any)[0].(obj)
		if res["status"] != "completed" || out["text"] != " The quick brown fox" {
			t.Errorf("/v1/responses = %v", res)
		}
	})
	t.Run("rerank", func(t *testing.T) {
		for _, path := range []string{"/v1/rerank", "/rerank", "/v1/reranking"} {
			res := get(t, "POST", path, `{"query":"llama fur","documents":["a red car","llama fur is warm"],"top_n":1}`)
			results := res["results"].([]any)
			if len(results) != 1 || results[0].(obj)["index"] != 1.0 {
				t.Errorf("%s results = %v", path, results)
			}
		}
	})
	t.Run("slots and metrics", func(t *testing.T) {
		var slots []obj
		p.call("GET", "/slots", "", &slots)
		if len(slots) != 2 {
			t.Errorf("slots = %v", slots)
		}
		_, b, err := p.try("GET", "/metrics", "")
		if err != nil || !strings.Contains(string(b), "llamacpp:tokens_predicted_total") {
			t.Errorf("/metrics = %s %v", b, err)
		}
	})
	t.Run("bad JSON", func(t *testing.T) {
		var res struct {
			Error struct {
				Code int
				Type string
			}
		}
		// llama-server answers a JSON parse error with 500 server_error, not 400.
		for _, body := range []string{`{"messages":`, ``, `null`, `[1]`} {
			if code := p.call("POST", "/v1/chat/completions", body, &res); code != 500 || res.Error.Code != 500 || res.Error.Type != "server_error" {
				t.Errorf("body %q = %d %+v, want 500 server_error", body, code, res)
			}
		}
		if code := p.call("POST", "/v1/chat/completions", `{}`, &res); code != 400 || res.Error.Type != "invalid_request_error" {
			t.Errorf("no messages = %d %+v, want 400 invalid_request_error", code, res)
		}
	})
	t.Run("unknown route", func(t *testing.T) {
		for _, c := range [][2]string{{"POST", "/health"}, {"GET", "/no/such/path"}} {
			req, _ := http.NewRequest(c[0], p.url+c[1], nil)
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 404 || !res.Close {
				t.Errorf("%s %s = %d, close %v; want 404 closing the connection", c[0], c[1], res.StatusCode, res.Close)
			}
		}
	})
	t.Run("stream closes the connection", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		body := `{"prompt":"x","stream":true}`
		fmt.Fprintf(conn, "POST /completion HTTP/1.1\r\nHost: fake\r\nX-Request-Id: r1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		br := bufio.NewReader(conn)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(res.Body) // a clean chunked body: no error
		if err != nil || res.Close || res.Header.Get("X-Request-Id") != "r1" || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream: err %v, close %v, headers %v", err, res.Close, res.Header)
		}
		if n := strings.Count(string(data), "data: "); n != 5 {
			t.Errorf("%d events, want 5", n)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("after the stream: read %v, want EOF (connection closed)", err)
		}
	})
	t.Run("plain responses keep the connection", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		for _, path := range []string{"/props", "/health"} { // two requests, one connection
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: fake\r\n\r\n", path)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("GET %s on a reused connection: %v", path, err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 || res.Close {
				t.Fatalf("GET %s = %d, close %v", path, res.StatusCode, res.Close)
			}
		}
	})
	t.Run("request id echo", func(t *testing.T) {
		req, _ := http.NewRequest("GET", p.url+"/props", nil)
		req.Header.Set("X-Request-Id", "req-42")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.Header.Get("X-Request-Id"); got != "req-42" {
			t.Errorf("X-Request-Id = %q", got)
		}
	})
}

// sseData posts body and returns the payloads of the stream's data lines.
func sseData(t *testing.T, url, body string) []string {
	t.Helper()
	res, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestFakeHooks(t *testing.T) {
	t.Parallel()
	p := startFake(t, fakeOpts{})
	p.waitReady()
	var hold struct {
		HeldMB int `json:"held_mb"`
	}
	if code := p.call("POST", "/fake/hold?mb=48", "", &hold); code != 200 || hold.HeldMB != 48 {
		t.Fatalf("/fake/hold = %d %+v", code, hold)
	}
	if runtime.GOOS == "linux" {
		if rss := rssMB(t, p.cmd.Process.Pid); rss < 48 {
			t.Errorf("RSS after holding 48 MiB = %d MiB", rss)
		}
	}
	if code := p.call("POST", "/fake/hold?mb=lots", "", nil); code != 400 {
		t.Errorf("bad mb = %d, want 400", code)
	}
	p.call("POST", "/tokenize", `{"content":"x"}`, nil)
	var stats struct{ Requests, Completed, InFlight int }
	p.call("GET", "/fake/stats", "", &stats)
	if stats.Requests != 1 || stats.Completed != 1 || stats.InFlight != 0 {
		t.Errorf("stats = %+v", stats)
	}
	if _, _, err := p.try("POST", "/fake/crash", ""); err == nil {
		t.Error("/fake/crash answered; want the connection to drop")
	}
	if code := p.wait(); code != 3 {
		t.Fatalf("exit code after /fake/crash = %d, want 3", code)
	}
	if ex := testbed.ReadRecord(t, p.record); ex[len(ex)-1].Event != "exit" || ex[len(ex)-1].Code != 3 {
		t.Errorf("last event = %+v", ex[len(ex)-1])
	}
}
