package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
)

// startFakeLlama runs the fake llama-server on a free port and waits until it is ready. sidecar,
// when not empty, is its per-model knob file. It returns the base URL and the record file.
func startFakeLlama(t *testing.T, sidecar string, env ...string) (string, string) {
	t.Helper()
	return startFakeLlamaAt(t, "", sidecar, env...)
}

// startFakeLlamaAt runs the fake llama-server on socket (a free port when empty). The URL of one
// on a socket is "unix://PATH".
func startFakeLlamaAt(t *testing.T, socket, sidecar string, env ...string) (string, string) {
	t.Helper()
	bin := testbed.FakeLlamaServer(t)
	dir := t.TempDir()
	model := filepath.Join(dir, "m1.gguf")
	record := filepath.Join(dir, "record.jsonl")
	if err := os.WriteFile(model, []byte("not a real GGUF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if sidecar != "" {
		if err := os.WriteFile(model+".fake.json", []byte(sidecar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-m", model, "--host", socket}
	url, client := "unix://"+socket, &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		},
	}}
	if socket == "" {
		port := strconv.Itoa(testbed.FreePort(t))
		args = []string{"-m", model, "--host", "127.0.0.1", "--port", port}
		url, client = "http://127.0.0.1:"+port, http.DefaultClient
	}
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FAKE_LLAMA_") && !strings.HasPrefix(kv, "LLAMA_SERVER_ROUTER_PORT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, "FAKE_LLAMA_RECORD="+record), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	base := url
	if socket != "" {
		base = "http://fake"
	}
	testbed.WaitFor(t, 30*time.Second, "the fake llama-server to be ready", func() bool {
		resp, err := client.Get(base + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return url, record
}

func TestThroughFakeLlamaServer(t *testing.T) {
	fake, record := startFakeLlama(t, "", "FAKE_LLAMA_TOKENS=20", "FAKE_LLAMA_TOKEN_DELAY=20ms")
	srv, fe, _ := testRouter(t, fake, nil)

	// A streamed chat: chunks arrive while the fake is still generating.
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"fast","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	var chunks []string
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		chunks = append(chunks, line)
		if len(chunks) == 2 {
			var stats struct {
				InFlight int `json:"in_flight"`
			}
			r, err := http.Get(srv.URL + "/upstream/m1/fake/stats")
			if err != nil {
				t.Fatal(err)
			}
			_ = json.NewDecoder(r.Body).Decode(&stats)
			r.Body.Close()
			if stats.InFlight != 1 {
				t.Fatalf("in_flight %d after the first token: the router buffers the stream", stats.InFlight)
			}
		}
	}
	resp.Body.Close()
	if err := sc.Err(); err != nil || len(chunks) < 20 || chunks[len(chunks)-1] != "[DONE]" {
		t.Fatalf("%d chunks, last %q, %v", len(chunks), chunks[len(chunks)-1], err)
	}

	// Non-streamed native endpoints and the passthrough.
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/completion", `{"model":"m1","prompt":"x"}`},
		{"POST", "/tokenize", `{"model":"m1","content":"hello"}`},
		{"GET", "/props?model=m1", ""},
		{"GET", "/upstream/m1/health", ""},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, r.StatusCode, b)
		}
	}
	waitReleased(t, fe, 6)

	// A client that leaves mid-stream cancels the fake's task.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/completion", strings.NewReader(`{"model":"m1","prompt":"x","stream":true,"n_predict":1000}`))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	testbed.ReadSSEEvent(t, bufio.NewReader(resp.Body))
	cancel()
	resp.Body.Close()
	testbed.WaitFor(t, 10*time.Second, "the fake to record a cancel", func() bool {
		for _, ev := range testbed.ReadRecord(t, record) {
			if ev.Event == "cancel" {
				return true
			}
		}
		return false
	})
	waitReleased(t, fe, 1)
}

func TestFakeLlamaCrashMidStream(t *testing.T) {
	fake, _ := startFakeLlama(t, `{"crash_after_requests": 1, "tokens": 6}`)
	srv, fe, _ := testRouter(t, fake, nil)
	resp, err := http.Post(srv.URL+"/completion", "application/json", strings.NewReader(`{"model":"m1","prompt":"x","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(string(body), "data: ") {
		t.Fatalf("client saw %q, %v; want some chunks then an aborted body", body, err)
	}
	waitReleased(t, fe, 1)
}
