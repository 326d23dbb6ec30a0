package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
	"github.com/llamatray/llamatray/router/wire"
)

// greedyStream posts a streamed chat at temperature 0 (a draft's tokens are accepted where the
// model would have picked the same) and returns the status and the stream.
func (in *instance) greedyStream(ctx context.Context, model string, maxTokens int) (int, string, error) {
	b, _ := json.Marshal(map[string]any{
		"model": model, "stream": true, "max_tokens": maxTokens, "ignore_eos": true, "temperature": 0,
		"messages": []map[string]string{{"role": "user", "content": "Say something."}},
	})
	req, _ := http.NewRequestWithContext(ctx, "POST", in.base+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// TestDraftModel runs the real llama-server with draft models: "target" (256 wide) drafts with
// "draft" (64 wide, its own random weights, the same generated vocabulary), and "self" drafts with
// its own file, which a greedy draft always guesses right. Each child's command line carries
// --model-draft with the draft's file and the draft's flags; the answers stream; GET /api/activity
// reports the draft's tokens and acceptance rate from llama-server's timings (1 for "self"). A model
// whose draft has another vocabulary is refused before any child starts, naming both models.
func TestDraftModel(t *testing.T) {
	in := startModels(t, func(id string) ggufwrite.LlamaOptions {
		if id == "draft" {
			return ggufwrite.LlamaOptions{Width: 64, Blocks: 2}
		}
		return ggufwrite.LlamaOptions{Width: 256, Blocks: 2}
	}, []string{"target", "draft", "self", "lonely"}, func(c *config.Config) {
		c.Models = map[string]config.Model{
			"target": {Draft: "draft", DraftMax: 4},
			"self":   {Draft: "self", DraftMax: 8},
			"lonely": {Draft: "alien"},
		}
	})
	// alien: another vocabulary (32000 tokens); a header-only file, never run.
	alien := ggufwrite.Header(ggufwrite.HeaderOptions{Blocks: 2, Embedding: 64, FFN: 128, Heads: 4, Vocab: 32000, ContextLength: 2048})
	if err := ggufwrite.WriteFile(filepath.Join(in.dir, "alien.gguf"), alien); err != nil {
		t.Fatal(err)
	}
	if err := in.svc.Catalog().Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	in.svc.Engine().SyncCatalog()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	for model, draft := range map[string]string{"target": "draft", "self": "self"} {
		for range 3 {
			code, body, err := in.greedyStream(ctx, model, 24)
			if err != nil || code != 200 || !strings.Contains(body, `"content":`) || !strings.HasSuffix(strings.TrimSpace(body), "data: [DONE]") {
				t.Fatalf("%s: %d %v %.400s", model, code, err, body)
			}
		}
		args := strings.Join(in.state(model).Args, " ")
		t.Logf("%s's child: llama-server %s", model, args)
		want := "--model-draft " + filepath.Join(in.dir, draft+".gguf") + " --spec-type draft-simple --spec-draft-n-max "
		if !strings.Contains(args, want) {
			t.Errorf("%s's args %q lack %q", model, args, want)
		}
	}

	resp, err := http.Get(in.base + "/api/activity")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc wire.Activity
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]wire.ActivityStats{}
	for _, m := range doc.Models {
		got[m.Model] = m.Total
	}
	for _, model := range []string{"target", "self"} {
		s := got[model]
		t.Logf("%s: %d tokens out, %.1f tokens/s, draft accepted %d of %d (%.2f)", model, s.TokensOut, s.TokensPerSecond, s.DraftAccepted, s.DraftTokens, s.DraftAcceptance)
		if s.Requests != 3 || s.TokensOut != 72 || s.DraftTokens <= 0 || s.DraftAccepted > s.DraftTokens {
			t.Errorf("%s: activity %+v", model, s)
		}
	}
	if s := got["self"]; s.DraftAcceptance != 1 {
		t.Errorf("self drafting for itself, greedy: acceptance %.2f (%d of %d)", s.DraftAcceptance, s.DraftAccepted, s.DraftTokens)
	}

	meta := func(id string) wire.ModelMeta {
		resp, err := http.Get(in.base + "/v1/models/" + id)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m wire.Model
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || m.Meta == nil {
			t.Fatalf("GET /v1/models/%s: %v %+v", id, err, m)
		}
		return *m.Meta
	}
	if m := meta("target"); m.Draft != "draft" || m.DraftBytes <= 0 || m.DraftError != "" {
		t.Errorf("target's meta: %+v", m)
	}
	if m := meta("lonely"); m.Draft != "" || !strings.Contains(m.DraftError, "alien cannot draft for lonely") {
		t.Errorf("lonely's meta: %+v", m)
	}
	code, body, err := in.chat(ctx, "lonely", false, 4)
	if err != nil || code == 200 || !strings.Contains(body, "alien cannot draft for lonely: lonely has 329 tokens and alien 32000") {
		t.Fatalf("lonely: %d %v %s", code, err, body)
	}
	if st := in.state("lonely"); st.PID != 0 || st.ExitCode != nil {
		t.Fatalf("lonely's child started: %+v", st)
	}
}
