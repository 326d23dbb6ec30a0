package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/client"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
	"github.com/llamatray/llamatray/router/wire"
)

// modelsConfig writes two models and a config serving them on a free port; model "big" has its
// own context size, so the estimates depend on the configuration.
func modelsConfig(t *testing.T) (string, config.Config) {
	dir := isolate(t)
	models := filepath.Join(dir, "models")
	os.MkdirAll(models, 0o755)
	for name, ctx := range map[string]int{"small": 2048, "big": 32768} {
		h := ggufwrite.Header(ggufwrite.HeaderOptions{Name: name, Blocks: 8, Embedding: 512, ContextLength: ctx, FileType: 15})
		if err := ggufwrite.WriteFile(filepath.Join(models, name+".gguf"), h); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default()
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg.ModelDirs = []string{models}
	cfg.ScanDefaultDirs = false
	cfg.LlamaServer = testbed.FakeLlamaServer(t)
	cfg.Models = map[string]config.Model{"big": {CtxSize: 16384}}
	path := filepath.Join(dir, "config.toml")
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	return path, cfg
}

// startService runs the service of cfg until the test ends.
func startService(t *testing.T, cfg config.Config, path string) *service.Service {
	svc, err := service.New(cfg, service.Options{ConfigPath: path, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		svc.Stop(ctx)
	})
	return svc
}

// decodeModels reads `--json` output strictly: every field must be one of GET /models.
func decodeModels(t *testing.T, b []byte) []wire.Model {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var ms []wire.Model
	if err := dec.Decode(&ms); err != nil {
		t.Fatalf("--json output %q: %v", b, err)
	}
	return ms
}

// estimates maps each model's ID to the raw JSON of its status.memory_estimate_bytes.
func estimates(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	var ms []struct {
		ID     string                     `json:"id"`
		Status map[string]json.RawMessage `json:"status"`
	}
	if err := json.Unmarshal(raw, &ms); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range ms {
		est, ok := m.Status["memory_estimate_bytes"]
		if !ok || m.ID == "" {
			t.Fatalf("entry without id or status.memory_estimate_bytes: %s", raw)
		}
		out[m.ID] = string(est)
	}
	return out
}

// `llamatray models --json` and GET /models agree to the byte on every model's estimate, both when
// the CLI reads the running instance and when it builds the view itself; `ps` says when nothing
// is loaded, and `ps --json` gives the same objects.
func TestModelsJSONMatchesAPI(t *testing.T) {
	path, cfg := modelsConfig(t)

	// No instance yet: the CLI builds the service's view itself.
	code, o := runCLI(t, "models", "--json", "--config", path)
	if code != 0 {
		t.Fatalf("models --json offline: %d %s", code, o.stderr.String())
	}
	offline := o.stdout.Bytes()
	if ms := decodeModels(t, offline); len(ms) != 2 || ms[0].ID != "big" || ms[0].Meta == nil || ms[0].Meta.ContextLength != 32768 {
		t.Fatalf("offline %s", offline)
	}

	startService(t, cfg, path)
	resp, err := http.Get("http://" + cfg.Listen + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Data json.RawMessage }
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	api := estimates(t, list.Data)
	if len(api) != 2 || api["big"] == api["small"] || api["big"] == "0" || api["small"] == "0" {
		t.Fatalf("API estimates %v", api)
	}
	code, o = runCLI(t, "models", "--json", "--config", path)
	if code != 0 {
		t.Fatalf("models --json: %d %s", code, o.stderr.String())
	}
	online := o.stdout.Bytes()
	decodeModels(t, online)
	for name, out := range map[string][]byte{"offline": offline, "with the instance": online} {
		got := estimates(t, out)
		if len(got) != len(api) {
			t.Fatalf("%s: %v, API %v", name, got, api)
		}
		for id, want := range api {
			if got[id] != want {
				t.Errorf("%s: %s estimate %s, API says %s", name, id, got[id], want)
			}
		}
	}
	// With the instance, the objects are GET /models "data" itself.
	var a, b bytes.Buffer
	json.Compact(&a, list.Data)
	json.Compact(&b, online)
	if a.String() != b.String() {
		t.Errorf("models --json:\n%s\nGET /models data:\n%s", b.String(), a.String())
	}
	// The table prints the same estimate.
	code, o = runCLI(t, "models", "--config", path)
	var est int64
	fmt.Sscan(api["big"], &est)
	if code != 0 || !strings.Contains(o.stdout.String(), humanBytes(est)) || !strings.Contains(o.stdout.String(), "STATE") {
		t.Fatalf("models: %d %q, want %s", code, o.stdout.String(), humanBytes(est))
	}

	// ps: nothing loaded, then one.
	if code, o := runCLI(t, "ps", "--config", path); code != 0 || strings.TrimSpace(o.stdout.String()) != "No model is loaded." {
		t.Fatalf("ps, nothing loaded: %d %q %q", code, o.stdout.String(), o.stderr.String())
	}
	if code, o := runCLI(t, "ps", "--json", "--config", path); code != 0 || strings.TrimSpace(o.stdout.String()) != "[]" {
		t.Fatalf("ps --json, nothing loaded: %d %q %q", code, o.stdout.String(), o.stderr.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := client.New(cfg.Listen).Load(ctx, "small"); err != nil {
		t.Fatal(err)
	}
	code, o = runCLI(t, "ps", "--json", "--config", path)
	if code != 0 {
		t.Fatalf("ps --json: %d %s", code, o.stderr.String())
	}
	// (Once loaded, the estimate is the footprint measured, so it is not compared with the one before.)
	ps := decodeModels(t, o.stdout.Bytes())
	if len(ps) != 1 || ps[0].ID != "small" || ps[0].Status.Value != "loaded" || ps[0].Status.PID == 0 ||
		ps[0].Status.MemoryEstimateBytes <= 0 || estimates(t, o.stdout.Bytes())["small"] == "" {
		t.Fatalf("ps --json: %s", o.stdout.String())
	}
}

// A pin means one thing: from the API, the CLI and the tray (which calls Service.SetPinned) it takes
// effect at once and is saved in the configuration file.
func TestPinIsSaved(t *testing.T) {
	path, cfg := modelsConfig(t)
	svc := startService(t, cfg, path)
	saved := func(id string) bool {
		t.Helper()
		c, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return c.Models[id].Pinned
	}
	if code, o := runCLI(t, "pin", "big", "--config", path); code != 0 || !strings.Contains(o.stdout.String(), "big pinned") {
		t.Fatalf("pin: %d %q %q", code, o.stdout.String(), o.stderr.String())
	}
	if m, err := svc.Model("big"); err != nil || !m.Pinned || !saved("big") || saved("small") {
		t.Fatalf("after llamatray pin: %+v %v, saved %v", m.ModelStatus, err, saved("big"))
	}
	if c, _ := config.Load(path); c.Models["big"].CtxSize != 16384 {
		t.Fatalf("the pin lost the model's other settings: %+v", c.Models["big"])
	}
	resp, err := http.Post("http://"+cfg.Listen+"/models/pin", "application/json", strings.NewReader(`{"model":"small"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if m, _ := svc.Model("small"); resp.StatusCode != 200 || !m.Pinned || !saved("small") {
		t.Fatalf("after POST /models/pin: %d %+v, saved %v", resp.StatusCode, m.ModelStatus, saved("small"))
	}
	if code, o := runCLI(t, "unpin", "big", "--config", path); code != 0 || !strings.Contains(o.stdout.String(), "big unpinned") {
		t.Fatalf("unpin: %d %q %q", code, o.stdout.String(), o.stderr.String())
	}
	if m, _ := svc.Model("big"); m.Pinned || saved("big") || !saved("small") || !svc.Config().Models["small"].Pinned {
		t.Fatalf("after llamatray unpin: %+v, saved %v", m.ModelStatus, saved("big"))
	}
	if code, o := runCLI(t, "pin", "nope", "--config", path); code != 1 || !strings.Contains(o.stderr.String(), "nope") {
		t.Fatalf("pin unknown: %d %q", code, o.stderr.String())
	}
}

// `llamatray models` lists a model's variants as models of their own, each with the context it
// runs with and its own estimate.
func TestModelsListsVariants(t *testing.T) {
	path, cfg := modelsConfig(t)
	cfg.Models = map[string]config.Model{"big": {CtxSize: 16384, Variants: map[string]config.Model{"short": {CtxSize: 1024}}}}
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	code, o := runCLI(t, "models", "--config", path)
	if code != 0 {
		t.Fatalf("models: %d %s", code, o.stderr.String())
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(o.stdout.String()), "\n")[1:] {
		f := strings.Fields(line)
		rows[f[0]] = f
	}
	base, short := rows["big"], rows["big@short"]
	if len(rows) != 3 || base == nil || short == nil {
		t.Fatalf("table:\n%s", o.stdout.String())
	}
	// ID ARCH PARAMS QUANT SIZE(2 fields) CONTEXT CTX EST. MEMORY
	if base[6] != "32768" || base[7] != "16384" || short[6] != "32768" || short[7] != "1024" || base[8] == short[8] {
		t.Fatalf("big %v, big@short %v", base, short)
	}
}

// `llamatray ps` says under a waiting model's row why it waits, in the sentence of GET /models
// status.wait.text, and the rows stay aligned around it: with max_loaded 1, a long stream holds
// small while a request for big waits.
func TestPSSaysWhyItWaits(t *testing.T) {
	path, cfg := modelsConfig(t)
	cfg.MaxLoaded = 1
	if err := cfg.Save(path); err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(cfg.ModelDirs[0], "small.gguf")
	if err := os.WriteFile(small+".fake.json", []byte(`{"tokens": 100000, "token_delay": "20ms"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	startService(t, cfg, path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chat := func(model string) (*http.Response, error) {
		body := fmt.Sprintf(`{"model":%q,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, model)
		req, err := http.NewRequestWithContext(ctx, "POST", "http://"+cfg.Listen+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		return http.DefaultClient.Do(req)
	}
	resp, err := chat("small")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 1)); resp.StatusCode != 200 || err != nil {
		t.Fatalf("small's stream: %d %v", resp.StatusCode, err)
	}
	queued := make(chan error, 1)
	go func() {
		r, err := chat("big")
		if err == nil {
			r.Body.Close()
		}
		queued <- err
	}()
	c := client.New(cfg.Listen)
	var text string
	testbed.WaitFor(t, 30*time.Second, "big's request to wait", func() bool {
		ms, err := c.Models(ctx)
		for _, m := range ms {
			if m.ID == "big" && m.Status.Wait != nil {
				text = m.Status.Wait.Text
			}
		}
		return err == nil && text != ""
	})
	if !strings.HasPrefix(text, "waiting: every model is busy since ") || !strings.Contains(text, "small 1 request") ||
		!strings.Contains(text, "max_loaded 1 reached") {
		t.Fatalf("big waits: %q", text)
	}

	code, o := runCLI(t, "ps", "--config", path)
	if code != 0 {
		t.Fatalf("ps: %d %q %q", code, o.stdout.String(), o.stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(o.stdout.String(), "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "big ") || lines[2] != "  ↳ "+text || !strings.HasPrefix(lines[3], "small ") {
		t.Fatalf("ps, want big's row, the reason under it, then small's row:\n%s", o.stdout.String())
	}
	// The columns line up above and below the reason.
	col := strings.Index(lines[0], "STATE")
	for _, row := range []string{lines[1], lines[3]} {
		if col < 1 || len(row) <= col || row[col-1] != ' ' || row[col] == ' ' {
			t.Fatalf("the STATE column is at %d in the header; rows:\n%s", col, o.stdout.String())
		}
	}
	if f := strings.Fields(lines[1]); f[1] != "unloaded" || f[3] != "1" {
		t.Fatalf("big's row: %q", lines[1])
	}
	if f := strings.Fields(lines[3]); f[1] != "loaded" || f[2] != "1" {
		t.Fatalf("small's row: %q", lines[3])
	}
	code, o = runCLI(t, "ps", "--json", "--config", path)
	if ps := decodeModels(t, o.stdout.Bytes()); code != 0 || len(ps) != 2 || ps[0].Status.Wait == nil || ps[0].Status.Wait.Text != text || ps[1].Status.Wait != nil {
		t.Fatalf("ps --json: %d %s", code, o.stdout.String())
	}
	cancel()
	<-queued
}

// A model whose header lacks what the memory estimate needs is listed with the reason under the
// table, not with its file size passed off as an estimate.
func TestModelsSaysWhyUnsized(t *testing.T) {
	path, cfg := modelsConfig(t)
	f := ggufwrite.Header(ggufwrite.HeaderOptions{Name: "odd", Blocks: 2, Embedding: 256, Heads: 4})
	for i, kv := range f.KVs {
		if kv.Key == "llama.embedding_length" {
			f.KVs = append(f.KVs[:i], f.KVs[i+1:]...)
			break
		}
	}
	if err := ggufwrite.WriteFile(filepath.Join(cfg.ModelDirs[0], "odd.gguf"), f); err != nil {
		t.Fatal(err)
	}
	code, o := runCLI(t, "models", "--config", path)
	if code != 0 {
		t.Fatalf("models: %d %s", code, o.stderr.String())
	}
	if !strings.Contains(o.stdout.String(), "odd: no memory estimate: cannot size this model: llama.embedding_length is missing") {
		t.Fatalf("models:\n%s\nstderr:\n%s", o.stdout.String(), o.stderr.String())
	}
}
