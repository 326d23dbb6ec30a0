package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// A llama.cpp router client's view of Llamatray with the real llama-server: /props says "router",
// ?autoload=false does not load, /models/sse reports the load as llama.cpp's router does, and
// /models?reload=1 finds a model file added meanwhile.
func TestRouterClientView(t *testing.T) {
	in := start(t, []string{"alpha"}, nil)
	resp, err := http.Get(in.base + "/props")
	if err != nil {
		t.Fatal(err)
	}
	var props struct {
		Role string `json:"role"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&props)
	resp.Body.Close()
	if props.Role != "router" {
		t.Fatalf("props role %q", props.Role)
	}

	sse, err := http.Get(in.base + "/models/sse")
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Body.Close()
	events := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(sse.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ev struct {
					Model, Event string
					Data         struct{ Status string }
				}
				if json.Unmarshal([]byte(data), &ev) == nil {
					events <- ev.Model + " " + ev.Event + " " + ev.Data.Status
				}
			}
		}
		close(events)
	}()

	body := string(chatBody("alpha", false, 4))
	resp, err = http.Post(in.base+"/v1/chat/completions?autoload=false", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "model is not loaded") || in.state("alpha").State != "unloaded" {
		t.Fatalf("autoload=false: %d %s, alpha %s", resp.StatusCode, b, in.state("alpha").State)
	}
	if code, b, err := in.chat(t.Context(), "alpha", false, 4); err != nil || code != 200 {
		t.Fatalf("chat: %d %v %s", code, err, b)
	}
	expect := func(want ...string) {
		t.Helper()
		for _, w := range want {
			deadline := time.After(30 * time.Second)
			for got := ""; got != w; {
				select {
				case got = <-events:
				case <-deadline:
					t.Fatalf("no %q event", w)
				}
			}
		}
	}
	expect("alpha model_status loading", "alpha status_change loading", "alpha status_change loaded")

	if err := ggufwrite.WriteLlama(filepath.Join(in.dir, "gamma.gguf"), ggufwrite.LlamaOptions{Width: 64, Blocks: 2, Seed: 9, Name: "gamma"}); err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(in.base + "/models?reload=1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"id":"gamma"`) {
		t.Fatalf("reload: %s", b)
	}
	expect("* models_reload ")
}
