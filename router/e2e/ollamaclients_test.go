package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
)

// The names the Ollama client tests use: a chat model, an embedding model (llama-server runs it
// with --embeddings), a Hub name the stand-in Hub has not got, and one it has.
const (
	ocModel       = "alpha"
	ocEmbedModel  = "embed"
	ocUnknownPull = "hf.co/no-such-org/no-such-repo:Q4_K_M"
	ocPullModel   = "hf.co/" + e2eRepo + ":Q8_0"
	ocUnknown     = "x"
)

// ocNotFound are Ollama's messages for a model it does not have, by endpoint: 'model "x" not found,
// try pulling it first' everywhere, and Ollama 0.33's own wording where it differs
// (router/testbed/testdata/ollama/errors.json). The scripts check the same (notFound in lib.mjs).
func ocNotFound(endpoint string) []string {
	m := []string{fmt.Sprintf("model %q not found, try pulling it first", ocUnknown)}
	switch endpoint {
	case "chat", "generate":
		m = append(m, fmt.Sprintf("model '%s' not found", ocUnknown))
	case "show":
		m = append(m, fmt.Sprintf("model '%s:latest' not found", ocUnknown))
	}
	return m
}

// startOllamaClients is a Llamatray for the Ollama clients: the chat and embedding models, and
// the stand-in Hub for pulls, whose cache is one of the model folders.
func startOllamaClients(t *testing.T) *instance {
	t.Helper()
	fh := fakehub.New()
	t.Cleanup(fh.Close)
	if err := fh.AddModelRepo(t.TempDir(), e2eRepo, "Q8_0"); err != nil {
		t.Fatal(err)
	}
	hfHome := filepath.Join(t.TempDir(), "hf")
	if err := os.MkdirAll(filepath.Join(hfHome, "hub"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HF_ENDPOINT", fh.URL())
	t.Setenv("HF_HOME", hfHome)
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_TOKEN", "")
	return start(t, []string{ocModel, ocEmbedModel}, func(c *config.Config) {
		c.ModelDirs = append(c.ModelDirs, filepath.Join(hfHome, "hub"))
		c.Models = map[string]config.Model{ocEmbedModel: {Args: []string{"--embeddings", "--pooling", "mean"}}}
	})
}

// The official Ollama clients, unchanged, against Llamatray: Ollama's Go api package here, and the
// scripts in ollamaclients/ for the JavaScript client, LangChain's and the Python client. Each
// lists, shows, chats and generates (streamed and not), embeds, lists what runs, fails to pull an
// unknown name, pulls and deletes a Hub model, and gets Ollama's 404 for a model that is not there.
// A client that is not installed is skipped, saying how to install it, except under CI=true, where
// that fails (scripts/ollama-clients.sh installs them).
func TestOllamaClients(t *testing.T) {
	in := startOllamaClients(t)
	t.Run("go-api", func(t *testing.T) { ollamaGoClient(t, in.base) })

	dir, err := filepath.Abs("ollamaclients")
	if err != nil {
		t.Fatal(err)
	}
	// The steps every script runs, then each one's own.
	common := []string{"list", "show", "chat", "chat_stream", "generate", "generate_stream", "embed", "ps",
		"pull_unknown", "delete", "unknown_chat", "unknown_chat_stream", "unknown_generate", "unknown_embed"}
	t.Run("ollama-js", func(t *testing.T) {
		node := nodeFor(t, dir, "ollama")
		runClient(t, in.base, append(common, "version", "embeddings", "pull_unknown_stream", "pull", "unknown_show"),
			node, filepath.Join(dir, "ollama-js.mjs"))
	})
	t.Run("langchain", func(t *testing.T) {
		node := nodeFor(t, dir, "@langchain/ollama")
		runClient(t, in.base, append(common, "chat_check_or_pull", "pull_unknown_no_stream", "chat_check_or_pull_new"),
			node, filepath.Join(dir, "langchain.mjs"))
	})
	t.Run("ollama-python", func(t *testing.T) {
		py := pythonWithOllama(t)
		runClient(t, in.base, append(common, "embeddings", "pull_unknown_stream", "pull", "unknown_show"), py, filepath.Join(dir, "client.py"))
	})
}

// missing skips a test whose client is not installed, or fails it under CI.
func missing(t *testing.T, format string, a ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, a...) + ": run scripts/ollama-clients.sh to install the Ollama clients"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// nodeFor is the node binary, once the npm package pkg is installed in dir.
func nodeFor(t *testing.T, dir, pkg string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
		missing(t, "the npm package %s is not installed in %s", pkg, dir)
	}
	return node
}

// pythonWithOllama is a Python that imports Debian's python3-ollama: $OLLAMA_PYTHON, else
// /usr/bin/python3 (where the system's suite has python3-ollama), else the one
// scripts/ollama-clients.sh unpacks into the cache folder where it has not.
func pythonWithOllama(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("LLAMATRAY_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "llamatray-dev")
	}
	var tried []string
	for _, py := range []string{os.Getenv("OLLAMA_PYTHON"), "/usr/bin/python3", filepath.Join(cache, "python-ollama", "bin", "python3")} {
		if py == "" {
			continue
		}
		tried = append(tried, py)
		if err := exec.Command(py, "-c", "import ollama").Run(); err == nil {
			return py
		}
	}
	missing(t, "no Python with the ollama module (tried %s)", strings.Join(tried, ", "))
	return ""
}

// clientResult is the line a client script prints.
type clientResult struct {
	Client  string                     `json:"client"`
	Version string                     `json:"version"`
	OK      bool                       `json:"ok"`
	Steps   map[string]json.RawMessage `json:"steps"`
}

// runClient runs a client script against base and checks that it ran every one of want and that
// each passed.
func runClient(t *testing.T, base string, want []string, bin string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, base, ocModel)...)
	cmd.Dir = filepath.Dir(args[0])
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "OLLAMA_") || strings.HasPrefix(kv, "LANGSMITH_") || strings.HasPrefix(kv, "LANGCHAIN_")
	}), "OLLAMA_EMBED_MODEL="+ocEmbedModel, "OLLAMA_UNKNOWN_PULL="+ocUnknownPull, "OLLAMA_PULL_MODEL="+ocPullModel)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	defer func() {
		if t.Failed() { // what the script said as it went: which step hung, what else it printed
			sc := bufio.NewScanner(&stderr)
			for sc.Scan() {
				t.Log(sc.Text())
			}
		}
	}()
	out := strings.TrimSpace(stdout.String())
	var res clientResult
	if err := json.Unmarshal([]byte(out[strings.LastIndexByte(out, '\n')+1:]), &res); err != nil {
		t.Fatalf("%s: %v; no result line in its output: %v\n%s", filepath.Base(args[0]), runErr, err, out)
	}
	t.Logf("%s %s: %d steps in %v", res.Client, res.Version, len(res.Steps), time.Since(start).Round(time.Millisecond))
	for _, name := range want {
		raw, ok := res.Steps[name]
		var st struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		if !ok {
			t.Errorf("%s: step %s did not run", res.Client, name)
		} else if json.Unmarshal(raw, &st); !st.OK {
			t.Errorf("%s: step %s failed: %s", res.Client, name, st.Error)
		} else {
			t.Logf("%s: %s %s", res.Client, name, raw)
		}
	}
	if runErr != nil || !res.OK {
		t.Errorf("%s: exit %v, ok %v", res.Client, runErr, res.OK)
	}
}

// ollamaGoClient is Ollama's own Go client (github.com/ollama/ollama/api) against base.
func ollamaGoClient(t *testing.T, base string) {
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	c := api.NewClient(u, http.DefaultClient)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	off := false
	opts := map[string]any{"num_predict": 8, "seed": 1, "temperature": 0}
	msgs := []api.Message{{Role: "user", Content: "Say something."}}

	if err := c.Heartbeat(ctx); err != nil {
		t.Errorf("heartbeat: %v", err)
	}
	if v, err := c.Version(ctx); err != nil || v == "" {
		t.Errorf("version %q: %v", v, err)
	}
	list, err := c.List(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var names []string
	for _, m := range list.Models {
		names = append(names, m.Name)
		if m.Model != m.Name || len(m.Digest) != 64 || m.Size <= 0 || m.ModifiedAt.IsZero() || m.Details.Format != "gguf" {
			t.Errorf("list entry %+v", m)
		}
	}
	if !slices.Contains(names, ocModel+":latest") || !slices.Contains(names, ocEmbedModel+":latest") {
		t.Errorf("list %v", names)
	}

	show, err := c.Show(ctx, &api.ShowRequest{Model: ocModel})
	if err != nil || !slices.Contains(show.Capabilities, model.CapabilityCompletion) || show.Details.Format != "gguf" || show.ModelInfo == nil {
		t.Errorf("show %+v: %v", show, err)
	}

	final := func(what string, done bool, reason string, m api.Metrics, created time.Time) {
		t.Helper()
		if !done || (reason != "stop" && reason != "length") || m.EvalCount < 1 || m.TotalDuration <= 0 || created.IsZero() {
			t.Errorf("%s: done %v, done_reason %q, metrics %+v, created_at %v", what, done, reason, m, created)
		}
	}
	var chats []api.ChatResponse
	collect := func(r api.ChatResponse) error { chats = append(chats, r); return nil }
	if err := c.Chat(ctx, &api.ChatRequest{Model: ocModel, Messages: msgs, Stream: &off, Options: opts}, collect); err != nil || len(chats) != 1 {
		t.Fatalf("chat: %d answers, %v", len(chats), err)
	}
	last := chats[0]
	final("chat", last.Done, last.DoneReason, last.Metrics, last.CreatedAt)
	if last.Model != ocModel || last.Message.Role != "assistant" {
		t.Errorf("chat %+v", last)
	}
	chats = nil
	if err := c.Chat(ctx, &api.ChatRequest{Model: ocModel, Messages: msgs, Options: opts}, collect); err != nil || len(chats) < 2 {
		t.Fatalf("chat stream: %d objects, %v", len(chats), err)
	}
	last = chats[len(chats)-1]
	final("chat stream", last.Done, last.DoneReason, last.Metrics, last.CreatedAt)
	var text strings.Builder
	for _, r := range chats {
		text.WriteString(r.Message.Content)
	}
	if text.Len() == 0 {
		t.Error("chat stream: no text")
	}

	var gens []api.GenerateResponse
	gcollect := func(r api.GenerateResponse) error { gens = append(gens, r); return nil }
	if err := c.Generate(ctx, &api.GenerateRequest{Model: ocModel, Prompt: "Say something.", Stream: &off, Options: opts}, gcollect); err != nil || len(gens) != 1 {
		t.Fatalf("generate: %d answers, %v", len(gens), err)
	}
	final("generate", gens[0].Done, gens[0].DoneReason, gens[0].Metrics, gens[0].CreatedAt)
	gens = nil
	if err := c.Generate(ctx, &api.GenerateRequest{Model: ocModel, Prompt: "Say something.", Options: opts}, gcollect); err != nil || len(gens) < 2 {
		t.Fatalf("generate stream: %d objects, %v", len(gens), err)
	}
	g := gens[len(gens)-1]
	final("generate stream", g.Done, g.DoneReason, g.Metrics, g.CreatedAt)

	emb, err := c.Embed(ctx, &api.EmbedRequest{Model: ocEmbedModel, Input: []string{"hello", "world"}})
	if err != nil || emb.Model != ocEmbedModel || len(emb.Embeddings) != 2 || len(emb.Embeddings[0]) == 0 || len(emb.Embeddings[1]) != len(emb.Embeddings[0]) {
		t.Errorf("embed %+v: %v", emb, err)
	}
	one, err := c.Embeddings(ctx, &api.EmbeddingRequest{Model: ocEmbedModel, Prompt: "hello"})
	if err != nil || len(one.Embedding) == 0 {
		t.Errorf("embeddings %+v: %v", one, err)
	}

	ps, err := c.ListRunning(ctx)
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	running := false
	for _, m := range ps.Models {
		if m.Name == ocModel+":latest" {
			running = m.Size > 0 && !m.ExpiresAt.IsZero()
		}
	}
	if !running {
		t.Errorf("ps: %+v", ps.Models)
	}

	// An unknown name fails to pull, streamed or not; a name the Hub has pulls, then is deleted.
	for _, stream := range []*bool{nil, &off} {
		err := c.Pull(ctx, &api.PullRequest{Model: ocUnknownPull, Stream: stream}, func(api.ProgressResponse) error { return nil })
		var se api.StatusError
		if !errors.As(err, &se) || se.StatusCode < 400 || se.ErrorMessage == "" {
			t.Errorf("pull %s (stream %v): %#v", ocUnknownPull, stream == nil, err)
		}
	}
	var statuses []string
	if err := c.Pull(ctx, &api.PullRequest{Model: ocPullModel}, func(p api.ProgressResponse) error {
		statuses = append(statuses, p.Status)
		return nil
	}); err != nil || len(statuses) == 0 || statuses[len(statuses)-1] != "success" {
		t.Errorf("pull %s: %v, %v", ocPullModel, statuses, err)
	}
	if _, err := c.Show(ctx, &api.ShowRequest{Model: ocPullModel}); err != nil {
		t.Errorf("show %s after its pull: %v", ocPullModel, err)
	}
	if err := c.Delete(ctx, &api.DeleteRequest{Model: ocPullModel}); err != nil {
		t.Errorf("delete %s: %v", ocPullModel, err)
	}

	// A model the server does not have: Ollama's 404, with its message, from every call.
	notFound := func(endpoint string, err error) {
		t.Helper()
		var se api.StatusError
		if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound || !slices.Contains(ocNotFound(endpoint), se.ErrorMessage) {
			t.Errorf("%s of %q: %#v, want a StatusError 404 with one of %q", endpoint, ocUnknown, err, ocNotFound(endpoint))
		}
	}
	ignore := func(api.ChatResponse) error { return nil }
	notFound("chat", c.Chat(ctx, &api.ChatRequest{Model: ocUnknown, Messages: msgs, Stream: &off}, ignore))
	notFound("chat", c.Chat(ctx, &api.ChatRequest{Model: ocUnknown, Messages: msgs}, ignore))
	notFound("generate", c.Generate(ctx, &api.GenerateRequest{Model: ocUnknown, Prompt: "x"}, func(api.GenerateResponse) error { return nil }))
	_, err = c.Embed(ctx, &api.EmbedRequest{Model: ocUnknown, Input: "hello"})
	notFound("embed", err)
	_, err = c.Show(ctx, &api.ShowRequest{Model: ocUnknown})
	notFound("show", err)
}
