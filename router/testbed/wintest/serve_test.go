package wintest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/client"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
	"github.com/llamatray/llamatray/router/wire"
)

// httpClient opens a connection per request: llama-server closes one after a stream.
var httpClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}

// bed is what TestServe runs llamatray.exe with: a models folder with two small GGUF models
// (fast loads in 200ms, slow in a minute), each with a fake.json that makes the fake record
// its events, and the fake llama-server.exe.
type bed struct {
	dir, models, fake string
	fast, slow        string // model files
	record            string // record file of every fake
}

func newBed(t *testing.T) *bed {
	t.Helper()
	dir := t.TempDir()
	b := &bed{dir: dir, models: filepath.Join(dir, "models"), record: filepath.Join(dir, "record.jsonl")}
	if err := os.MkdirAll(b.models, 0o755); err != nil {
		t.Fatal(err)
	}
	b.fake = buildWindowsFake(t, filepath.Join(dir, "bin"))
	b.fast = b.model(t, "wintest-fast.gguf", "200ms")
	b.slow = b.model(t, "wintest-slow.gguf", "60s")
	return b
}

// model writes a small llama header-only GGUF and its fake.json.
func (b *bed) model(t *testing.T, name, loadTime string) string {
	t.Helper()
	p := filepath.Join(b.models, name)
	f := ggufwrite.Header(ggufwrite.HeaderOptions{Blocks: 4, Embedding: 256, FFN: 512, Heads: 8, Vocab: 2000, FileType: 15})
	if err := ggufwrite.WriteFile(p, f); err != nil {
		t.Fatal(err)
	}
	side, err := json.Marshal(map[string]any{"load_time": loadTime, "tokens": 6, "token_delay": "5ms", "record": winPath(b.record)})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p+".fake.json", side, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// buildWindowsFake cross-builds the fake llama-server for Windows as dir/llama-server.exe.
func buildWindowsFake(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "llama-server.exe")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool(), "build", "-trimpath", "-o", out, "github.com/llamatray/llamatray/router/testbed/fakellama")
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the fake llama-server for Windows: %v\n%s", err, b)
	}
	return out
}

// goTool is the go command of the toolchain running the tests, else the one on PATH.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// serve is a running `llamatray.exe serve`.
type serve struct {
	cmd    *exec.Cmd
	output *os.File // stdout and stderr
	done   chan error
}

func (w *wine) startServe(t *testing.T, exe string, args ...string) *serve {
	t.Helper()
	cmd := w.command(context.Background(), exe, append([]string{"serve"}, args...)...)
	s := &serve{cmd: cmd, output: outputFile(t, "serve"), done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = s.output, s.output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("llamatray.exe serve output:\n%s", readOutput(t, s.output))
		}
	})
	return s
}

// log is what llamatray.exe serve has printed so far.
func (s *serve) log(t *testing.T) string { return readOutput(t, s.output) }

// exited says whether llamatray.exe has ended.
func (s *serve) exited() bool {
	select {
	case err := <-s.done:
		s.done <- err
		return true
	default:
		return false
	}
}

// chat sends one chat completion and returns the status and body (the whole stream, when
// stream is set).
func chat(t *testing.T, addr, model string, stream bool) (*http.Response, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": model, "stream": stream, "max_tokens": 6,
		"messages": []map[string]string{{"role": "user", "content": "Say hello from Windows."}}})
	resp, err := httpClient.Post("http://"+addr+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("chat %s: %v", model, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("chat %s: read: %v", model, err)
	}
	return resp, string(b)
}

// status is the model's status as the running instance reports it.
func status(t *testing.T, addr, id string) wire.ModelStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ms, err := client.New(addr).Models(ctx)
	if err != nil {
		t.Fatalf("GET /models: %v", err)
	}
	for _, m := range ms {
		if m.ID == id {
			return m.Status
		}
	}
	t.Fatalf("GET /models has no %s", id)
	return wire.ModelStatus{}
}

// starts are the record's start events: one per fake started.
func starts(t *testing.T, record string) []testbed.RecordEvent {
	t.Helper()
	var out []testbed.RecordEvent
	for _, ev := range testbed.ReadRecord(t, record) {
		if ev.Event == "start" {
			out = append(out, ev)
		}
	}
	return out
}

// streamContent joins the content deltas of an OpenAI chat stream and says whether it ended
// with [DONE].
func streamContent(t *testing.T, body string) (string, bool) {
	t.Helper()
	var sb strings.Builder
	done := false
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			t.Fatalf("stream chunk %q: %v", line, err)
		}
		for _, c := range chunk.Choices {
			sb.WriteString(c.Delta.Content)
		}
	}
	return sb.String(), done
}

// childPort is the --port a fake was started with.
func childPort(t *testing.T, ev testbed.RecordEvent) int {
	t.Helper()
	for i, a := range ev.Args {
		if a == "--port" && i+1 < len(ev.Args) {
			p, err := strconv.Atoi(ev.Args[i+1])
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	t.Fatalf("fake started without --port: %q", ev.Args)
	return 0
}
