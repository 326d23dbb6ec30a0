package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
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

// llamaRouter runs the real llama-server as llama.cpp's router over dir and returns its base URL.
func llamaRouter(t *testing.T, dir string) string {
	t.Helper()
	port := strconv.Itoa(testbed.FreePort(t))
	cmd := exec.Command(testbed.RealLlamaServer(t), "--models-dir", dir, "--models-max", "1",
		"--host", "127.0.0.1", "--port", port, "-c", "512", "-t", "1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // it stops its own children
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	base := "http://127.0.0.1:" + port
	testbed.WaitFor(t, 30*time.Second, "llama.cpp's router to answer", func() bool {
		resp, err := http.Get(base + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return base
}

// sseEvents reads /models/sse data lines of base into a channel, keyed "event/status".
func sseEvents(t *testing.T, base string) <-chan [2]string {
	t.Helper()
	resp, err := http.Get(base + "/models/sse")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	ch := make(chan [2]string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Event string
				Data  struct{ Status string }
			}
			if json.Unmarshal([]byte(data), &ev) == nil {
				ch <- [2]string{ev.Event + "/" + ev.Data.Status, data}
			}
		}
	}()
	return ch
}

// Llamatray and llama.cpp's router, side by side on the same model folder and the same real
// llama-server, answer GET /props, GET /models, ?autoload=false and the /models/sse events of a
// load in the same shapes, field by field.
func TestRouterParityLive(t *testing.T) {
	in := start(t, []string{"alpha"}, nil)
	ref := llamaRouter(t, in.dir)
	get := func(url string) []byte {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	compare := func(what string, want, got []byte, skip map[string]bool) {
		t.Helper()
		diffs, err := testbed.ShapeDiffs(want, got, skip)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, d := range diffs {
			t.Errorf("%s: %s (llama.cpp %s)", what, d, want)
		}
	}
	compare("GET /props", get(ref+"/props"), get(in.base+"/props"), nil)
	compare("GET /models", get(ref+"/models"), get(in.base+"/models"),
		map[string]bool{"data[].status.preset": true, "data[].source": true, "data[].can_remove": true})

	post := func(base, query string) (int, []byte) {
		resp, err := http.Post(base+"/v1/chat/completions"+query, "application/json", strings.NewReader(string(chatBody("alpha", false, 4))))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	type apiErr struct {
		Error struct{ Message, Type string } `json:"error"`
	}
	refCode, refBody := post(ref, "?autoload=false")
	code, body := post(in.base, "?autoload=false")
	var re, e apiErr
	_ = json.Unmarshal(refBody, &re)
	_ = json.Unmarshal(body, &e)
	if code != refCode || e.Error != re.Error {
		t.Fatalf("autoload=false: %d %s; llama.cpp's router: %d %s", code, body, refCode, refBody)
	}

	// A load, watched on both.
	refEvents, events := sseEvents(t, ref), sseEvents(t, in.base)
	for _, base := range []string{ref, in.base} {
		if code, b := post(base, ""); code != 200 {
			t.Fatalf("%s: %d %s", base, code, b)
		}
	}
	collect := func(ch <-chan [2]string) map[string]string {
		got := map[string]string{}
		deadline := time.After(30 * time.Second)
		for got["status_change/loaded"] == "" {
			select {
			case ev, ok := <-ch:
				if !ok {
					t.Fatalf("events ended: %v", got)
				}
				if _, seen := got[ev[0]]; !seen {
					got[ev[0]] = ev[1]
				}
			case <-deadline:
				t.Fatalf("no loaded event: %v", got)
			}
		}
		return got
	}
	want, got := collect(refEvents), collect(events)
	for key, w := range want {
		g, ok := got[key]
		if !ok {
			t.Errorf("no %s event; llama.cpp's router sent %s", key, w)
			continue
		}
		// The loaded info's meta is the child's own in llama.cpp, the catalog's in Llamatray.
		compare("/models/sse "+key, []byte(w), []byte(g), map[string]bool{"data.info.meta": true})
	}
}
