package ggufwrite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startServer starts the llama-server named by LLAMA_SERVER on a free
// 127.0.0.1 port with model and waits until /health answers 200. It returns
// the base URL; the server is stopped when the test ends.
func startServer(t *testing.T, model string) string {
	t.Helper()
	bin := os.Getenv("LLAMA_SERVER")
	if bin == "" {
		t.Skip("LLAMA_SERVER not set: point it to a llama-server (scripts/fetch-llama-server.sh prints one)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "llama-server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-m", model, "--host", "127.0.0.1", "--port", fmt.Sprint(port),
		"-c", "512", "-t", "1", "--no-webui")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	showLog := func() {
		b, _ := os.ReadFile(logPath)
		t.Logf("llama-server log:\n%s", b)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = logFile.Close()
		if t.Failed() {
			showLog()
		}
	})

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.After(60 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case err := <-done:
			done <- err // let the cleanup see the exit too
			t.Fatalf("llama-server exited before it was ready: %v", err)
		case <-deadline:
			t.Fatal("llama-server not ready after 60 s")
		case <-tick.C:
		}
	}
}

type chatResponse struct {
	Choices []struct {
		FinishReason *string `json:"finish_reason"`
		Message      struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func postChat(ctx context.Context, t *testing.T, base string, stream bool) *http.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"messages":   []map[string]string{{"role": "user", "content": "hello there"}},
		"max_tokens": 8,
		"stream":     stream,
		"seed":       1,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		t.Fatalf("chat completion: %s: %s", resp.Status, b)
	}
	return resp
}

// TestRealServerChat loads a Llama() model into the real llama-server and
// gets a chat completion, plain and streamed.
func TestRealServerChat(t *testing.T) {
	if os.Getenv("LLAMA_SERVER") == "" {
		t.Skip("LLAMA_SERVER not set: point it to a llama-server (scripts/fetch-llama-server.sh prints one)")
	}
	model := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := WriteLlama(model, LlamaOptions{Seed: 3}); err != nil {
		t.Fatal(err)
	}
	base := startServer(t, model)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	resp := postChat(ctx, t, base, false)
	var plain chatResponse
	err := json.NewDecoder(resp.Body).Decode(&plain)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Choices) != 1 || plain.Choices[0].Message.Role != "assistant" || plain.Choices[0].FinishReason == nil {
		t.Fatalf("chat completion: %+v", plain)
	}
	if plain.Usage == nil || plain.Usage.CompletionTokens < 1 || plain.Usage.CompletionTokens > 8 {
		t.Errorf("completion tokens: %+v", plain.Usage)
	}

	resp = postChat(ctx, t, base, true)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("stream content type %q", ct)
	}
	chunks, finished, sawDone := 0, false, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			sawDone = true
			break
		}
		var c chatResponse
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("stream chunk %q: %v", data, err)
		}
		chunks++
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				finished = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 2 || !finished || !sawDone {
		t.Errorf("stream: %d chunks, finish_reason seen %v, [DONE] seen %v", chunks, finished, sawDone)
	}
}
