package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adrg/xdg"

	"github.com/llamatray/llamatray/router/cli"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
)

const e2eRepo = "Org/Tiny-GGUF"

// hubInstance is a Llamatray started from a fresh home (no models, default folders only) whose
// Hugging Face Hub is the stand-in.
type hubInstance struct {
	t       *testing.T
	base    string
	hub     *fakehub.Hub
	svc     *service.Service
	home    string
	started time.Time
}

// startFresh starts the service in a fresh home. bin "" runs without llama-server (pull-only tests).
func startFresh(t *testing.T, bin string, tune func(home string)) *hubInstance {
	t.Helper()
	home := t.TempDir()
	fh := fakehub.New()
	t.Cleanup(fh.Close)
	if err := fh.AddModelRepo(t.TempDir(), e2eRepo, "Q4_K_M", "Q8_0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(xdg.Reload)
	for k, v := range map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_STATE_HOME": filepath.Join(home, ".local/state"),
		"XDG_DATA_HOME": filepath.Join(home, ".local/share"), "XDG_CACHE_HOME": "", "HF_HOME": "", "HF_HUB_CACHE": "", "HF_TOKEN": "",
		"LLAMA_CACHE": "", "HF_ENDPOINT": fh.URL(), "PATH": "/usr/bin:/bin"} {
		t.Setenv(k, v)
	}
	xdg.Reload()
	if tune != nil {
		tune(home)
	}
	cfg := config.Default()
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg.LlamaServer = bin
	if bin == "" {
		cfg.LlamaServer = "/nonexistent/llama-server"
	}
	cfg.Defaults.CtxSize = 512
	cfg.Defaults.Args = []string{"-t", "1"}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	started := time.Now()
	svc, err := service.New(cfg, service.Options{Version: "e2e", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := svc.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	if n := len(svc.Catalog().Models()); n != 0 {
		t.Fatalf("a fresh home has %d models", n)
	}
	return &hubInstance{t: t, base: "http://" + svc.ListenAddr(), hub: fh, svc: svc, home: home, started: started}
}

func (in *hubInstance) call(method, path, body string) (int, map[string]any) {
	in.t.Helper()
	req, _ := http.NewRequest(method, in.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		in.t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	json.NewDecoder(resp.Body).Decode(&doc)
	return resp.StatusCode, doc
}

func errMessage(doc map[string]any) string {
	e, _ := doc["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// pull posts POST /models and follows /models/events until the pull ends; it returns the last
// download event and whether a "downloading" event with per-file bytes was seen.
func (in *hubInstance) pull(name string) (last map[string]any, sawProgress bool) {
	in.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", in.base+"/models/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		in.t.Fatal(err)
	}
	defer resp.Body.Close()
	code, doc := in.call("POST", "/models", `{"model":"`+name+`"}`)
	if code != http.StatusAccepted || doc["status"] != "downloading" {
		in.t.Fatalf("POST /models %s: %d %v", name, code, doc)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) != nil || ev["kind"] != "download" || !strings.EqualFold(ev["model"].(string), doc["model"].(string)) {
			continue
		}
		if files, _ := ev["files"].([]any); ev["status"] == "downloading" && len(files) > 0 {
			f := files[0].(map[string]any)
			sawProgress = sawProgress || f["total"].(float64) > 0
		}
		if ev["status"] != "downloading" {
			return ev, sawProgress
		}
	}
	in.t.Fatalf("the event stream ended before the pull did: %v", sc.Err())
	return nil, false
}

// hubFiles lists every file under the fresh home's Hub cache.
func (in *hubInstance) hubFiles() []string {
	var out []string
	filepath.WalkDir(filepath.Join(in.home, ".cache", "huggingface"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// From a fresh home: pull by ORG/REPO:QUANT through a connection the Hub cuts halfway (it
// resumes with a range request and verifies), then chat under that name through the real
// llama-server, then remove it.
func TestFirstRunPullAndChat(t *testing.T) {
	bin := testbed.RealLlamaServer(t)
	in := startFresh(t, bin, nil)
	fileSize := int64(0)
	if code, doc := in.call("GET", "/api/hub/files?repo="+e2eRepo, ""); code == 200 {
		q := doc["quants"].([]any)[0].(map[string]any)
		fileSize = int64(q["size"].(float64))
		if q["fit"] != "fits" || q["model"] != e2eRepo+":Q4_K_M" {
			t.Errorf("files: %v", q)
		}
	} else {
		t.Fatalf("GET /api/hub/files: %d %v", code, doc)
	}
	in.hub.CutOnce(e2eRepo, fakehub.FileName(e2eRepo, "Q4_K_M"), fileSize/2)
	last, saw := in.pull("org/tiny-gguf:q4_k_m")
	if last["status"] != "downloaded" || !saw {
		t.Fatalf("pull ended %v (progress seen: %v)", last, saw)
	}
	if in.hub.RangeRequests() == 0 {
		t.Error("the cut download did not resume with a range request")
	}
	blob := filepath.Join(in.home, ".cache", "huggingface", "hub", "models--Org--Tiny-GGUF", "blobs", in.hub.SHA256(e2eRepo, fakehub.FileName(e2eRepo, "Q4_K_M")))
	if _, err := os.Stat(blob); err != nil {
		t.Fatalf("verified blob missing: %v", err)
	}

	// First token, streamed, under the ORG/REPO:QUANT name, case-insensitively.
	req, _ := http.NewRequest("POST", in.base+"/v1/chat/completions", bytes.NewReader(chatBody("org/TINY-gguf:Q4_k_m", true, 8)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("chat: %v %d %s", err, resp.StatusCode, b)
	}
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"content"`) {
			break
		}
	}
	t.Logf("fresh start to first token (pull of %d bytes, load, answer): %s", fileSize, time.Since(in.started).Round(time.Millisecond))
	rest, _ := io.ReadAll(rd)
	resp.Body.Close()
	if !strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("stream did not end: %s", rest)
	}
	if code, doc := in.call("GET", "/v1/models/"+url.PathEscape(e2eRepo+":Q4_K_M"), ""); code != 200 || doc["meta"].(map[string]any)["hub_name"] != e2eRepo+":Q4_K_M" {
		t.Errorf("GET /v1/models by hub name: %d %v", code, doc)
	}
	if code, doc := in.call("DELETE", "/models", `{"model":"`+e2eRepo+`:Q4_K_M"}`); code != 200 {
		t.Fatalf("DELETE /models: %d %v", code, doc)
	}
	if files := in.hubFiles(); len(files) != 0 {
		t.Errorf("left after removal: %v", files)
	}
	code, doc := in.call("POST", "/v1/chat/completions", string(chatBody(e2eRepo+":Q4_K_M", false, 4)))
	if code != 404 || !strings.Contains(errMessage(doc), "llamatray pull "+e2eRepo+":Q4_K_M") {
		t.Errorf("chat after removal: %d %v", code, doc)
	}
}

// A wrong sha256 is refused and leaves no file; cancel leaves nothing; a gated repo without a
// token gets a clear 401.
func TestPullRefusals(t *testing.T) {
	in := startFresh(t, "", nil)
	q8 := fakehub.FileName(e2eRepo, "Q8_0")
	in.hub.WrongSHA(e2eRepo, q8)
	last, _ := in.pull(e2eRepo + ":Q8_0")
	if last["status"] != "failed" || !strings.Contains(last["error"].(string), "sha256 mismatch") {
		t.Errorf("wrong sha: %v", last)
	}
	if files := in.hubFiles(); len(files) != 0 {
		t.Errorf("wrong sha left: %v", files)
	}

	started := in.hub.Stall(e2eRepo, fakehub.FileName(e2eRepo, "Q4_K_M"), 100_000)
	code, doc := in.call("POST", "/models", `{"model":"`+e2eRepo+`:Q4_K_M"}`)
	if code != 202 {
		t.Fatalf("pull to cancel: %d %v", code, doc)
	}
	<-started
	code, doc = in.call("DELETE", "/models?model="+e2eRepo+":Q4_K_M", "")
	if code != 200 || doc["status"] != "cancelled" {
		t.Errorf("cancel: %d %v", code, doc)
	}
	if files := in.hubFiles(); len(files) != 0 {
		t.Errorf("cancel left: %v", files)
	}

	in.hub.Gate(e2eRepo, "hf_token")
	code, doc = in.call("POST", "/models", `{"model":"`+e2eRepo+`:Q4_K_M"}`)
	if code != 401 || !strings.Contains(errMessage(doc), "gated") || !strings.Contains(errMessage(doc), "HF_TOKEN") {
		t.Errorf("gated: %d %v", code, doc)
	}
	t.Logf("gated answer: %s", errMessage(doc))
}

// A disk too small for the model (a 1 MiB tmpfs as the Hub cache) is refused before the download.
func TestPullFullDisk(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	in := startFresh(t, "", func(string) { t.Setenv("HF_HUB_CACHE", filepath.Join(dir, "hub")) })
	code, doc := in.call("POST", "/models", `{"model":"`+e2eRepo+`:Q8_0"}`)
	if code != 507 || !strings.Contains(errMessage(doc), "not enough free disk space") {
		t.Fatalf("full disk: %d %v", code, doc)
	}
	if in.hub.ContentRequests() != 0 {
		t.Errorf("%d content requests before the refusal", in.hub.ContentRequests())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("the refused pull wrote %v", entries)
	}
	t.Logf("full disk answer: %s", errMessage(doc))
}

// `llamatray pull` (the real command line, through the running instance) then a chat under the
// pulled name, then `llamatray rm`.
func TestCLIPullThenChat(t *testing.T) {
	bin := testbed.RealLlamaServer(t)
	in := startFresh(t, bin, nil)
	addr := strings.TrimPrefix(in.base, "http://")
	if code := cli.Main([]string{"pull", "org/tiny-gguf:q8_0", "--addr", addr}, cli.Build{Version: "e2e"}, nil); code != 0 {
		t.Fatalf("llamatray pull: exit %d", code)
	}
	code, doc := in.call("POST", "/v1/chat/completions", string(chatBody("Org/Tiny-GGUF:Q8_0", false, 4)))
	if code != 200 {
		t.Fatalf("chat with the pulled model: %d %v", code, doc)
	}
	if code := cli.Main([]string{"rm", "Org/Tiny-GGUF:Q8_0", "--addr", addr}, cli.Build{Version: "e2e"}, nil); code != 0 {
		t.Fatalf("llamatray rm: exit %d", code)
	}
	if files := in.hubFiles(); len(files) != 0 {
		t.Errorf("left after rm: %v", files)
	}
}
