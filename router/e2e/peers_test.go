//go:build unix

package e2e

// Peers across real Llamatray processes: each instance is the headless binary, built once, with its
// own HOME, XDG folders, port and models served by the fake llama-server.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
	"github.com/llamatray/llamatray/router/wire"
)

var llamatrayBin struct {
	once sync.Once
	path string
	err  error
}

// buildLlamatray builds the headless llamatray binary once per test binary.
func buildLlamatray(t *testing.T) string {
	t.Helper()
	llamatrayBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "llamatray-peers-bin-")
		if err != nil {
			llamatrayBin.err = err
			return
		}
		out := filepath.Join(dir, "llamatray")
		goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goBin); err != nil {
			goBin = "go"
		}
		cmd := exec.Command(goBin, "build", "-tags", "headless", "-o", out, ".")
		cmd.Dir = "../.."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			llamatrayBin.err = fmt.Errorf("go build: %w\n%s", err, msg)
			return
		}
		llamatrayBin.path = out
	})
	if llamatrayBin.err != nil {
		t.Fatal(llamatrayBin.err)
	}
	return llamatrayBin.path
}

// proc is one Llamatray process.
type proc struct {
	t    *testing.T
	name string
	dir  string
	port int
	base string
	env  []string
	cmd  *exec.Cmd
	done chan struct{}
}

// newProc prepares an instance with models (fake llama-server) and its configuration; start runs it.
func newProc(t *testing.T, name string, port int, models []string, env []string, tune func(*config.Config)) *proc {
	t.Helper()
	dir := t.TempDir()
	mdir := filepath.Join(dir, "models")
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, id := range models {
		if err := ggufwrite.WriteLlama(filepath.Join(mdir, id+".gguf"), ggufwrite.LlamaOptions{Width: 64, Blocks: 2, Seed: int64(i + 1), Name: id}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default()
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	cfg.ModelDirs = []string{mdir}
	cfg.ScanDefaultDirs = false
	cfg.LlamaServer = testbed.FakeLlamaServer(t)
	cfg.UpdateCheck = false
	cfg.Defaults.CtxSize = 512
	if tune != nil {
		tune(&cfg)
	}
	if err := cfg.Save(filepath.Join(dir, "config.toml")); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, name: name, dir: dir, port: port, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	p.env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_CACHE_HOME="+filepath.Join(dir, "cache"), "XDG_DATA_HOME="+filepath.Join(dir, "data"))
	p.env = append(p.env, env...)
	return p
}

func (p *proc) start() {
	t := p.t
	t.Helper()
	p.cmd = exec.Command(buildLlamatray(t), "serve", "--config", filepath.Join(p.dir, "config.toml"))
	p.cmd.Env = p.env
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its llama-servers go with it when killed
	out, _ := p.cmd.StdoutPipe()
	p.cmd.Stderr = p.cmd.Stdout
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.done = make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			t.Logf("%s: %s", p.name, sc.Text())
		}
	}()
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill)
	testbed.WaitFor(t, 60*time.Second, p.name+" to answer /health", func() bool {
		resp, err := http.Get(p.base + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

// kill ends the process and its children at once (SIGKILL to its process group).
func (p *proc) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	p.cmd = nil
}

func (p *proc) models() map[string]wire.Model {
	resp, err := http.Get(p.base + "/v1/models")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var l wire.ModelList
	_ = json.NewDecoder(resp.Body).Decode(&l)
	out := map[string]wire.Model{}
	for _, m := range l.Data {
		out[m.ID] = m
	}
	return out
}

func (p *proc) waitModel(id, status string, timeout time.Duration) {
	p.t.Helper()
	testbed.WaitFor(p.t, timeout, fmt.Sprintf("%s to list %s as %q", p.name, id, status), func() bool {
		m, ok := p.models()[id]
		return ok && (status == "" || m.Status.Value == status)
	})
}

func (p *proc) post(ctx context.Context, path, body string, header ...string) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return http.DefaultClient.Do(req)
}

// chatOK posts a short chat for model and wants 200.
func (p *proc) chatOK(model string, header ...string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := p.post(ctx, "/v1/chat/completions", string(chatBody(model, false, 4)), header...)
	if err != nil {
		p.t.Fatalf("chat %s: %v", model, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		p.t.Fatalf("chat %s through %s: %d %s", model, p.name, resp.StatusCode, b)
	}
}

// chatFails posts a chat for model and wants a 502 naming peer within 10 s.
func (p *proc) chatFails(model, peer string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := p.post(ctx, "/v1/chat/completions", string(chatBody(model, false, 4)))
	if err != nil {
		p.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), "peer_unreachable") || !strings.Contains(string(b), "peer "+peer+" (") || took > 10*time.Second {
		p.t.Fatalf("%s for a model of a peer gone: %d %s after %v", model, resp.StatusCode, b, took)
	}
	p.t.Logf("%s: a request for %s failed after %v: %s", p.name, model, took.Round(time.Millisecond), bytes.TrimSpace(b))
}

// recordingPeer stands in for another OpenAI-compatible server: it lists rec-model and records the
// Authorization of every request.
func recordingPeer(t *testing.T) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Api-Key"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/models" {
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"rec-model","object":"model","owned_by":"someone"}]}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"r","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), auths...)
	}
}

// TestPeersAcrossInstances: three and four Llamatray processes. A routes to B (with B's key), to C
// and to a plain OpenAI stand-in (no key: none is sent), lists their models, survives C killed
// mid-stream (the stream ends with an error event naming c; requests fail within 10 s; alpha is
// untouched), sees C come back by itself, and lists D, down when A started, once D is up.
func TestPeersAcrossInstances(t *testing.T) {
	rec, auths := recordingPeer(t)
	pb, pc, pd, pa := testbed.FreePort(t), testbed.FreePort(t), testbed.FreePort(t), testbed.FreePort(t)
	b := newProc(t, "b", pb, []string{"beta"}, nil, func(c *config.Config) { c.APIKeys = []string{"key-b"} })
	c := newProc(t, "c", pc, []string{"gamma"}, []string{"FAKE_LLAMA_TOKEN_DELAY=20ms"}, nil)
	d := newProc(t, "d", pd, []string{"delta"}, nil, nil)
	a := newProc(t, "a", pa, []string{"alpha", "gamma"}, nil, func(cfg *config.Config) {
		cfg.Peers = map[string]config.Peer{
			"b":   {URL: b.base, APIKey: "key-b"},
			"c":   {URL: c.base},
			"rec": {URL: rec.URL},
			"d":   {URL: d.base}, // not started yet
		}
	})
	b.start()
	c.start()
	a.start()

	a.waitModel("beta", "", 30*time.Second)
	a.waitModel("peer:c/gamma", "", 30*time.Second)
	a.waitModel("rec-model", "", 30*time.Second)
	ms := a.models()
	if ms["beta"].OwnedBy != "peer:b" || ms["gamma"].OwnedBy != "llamatray" || ms["peer:c/gamma"].OwnedBy != "peer:c" || ms["rec-model"].OwnedBy != "peer:rec" {
		t.Fatalf("A's models: %+v", ms)
	}

	// Routing, and keys: B needs key-b and gets it; the stand-in gets neither the client's key nor B's.
	a.chatOK("beta", "Authorization", "Bearer client-secret")
	a.chatOK("peer:c/gamma")
	a.chatOK("rec-model", "Authorization", "Bearer client-secret", "X-Api-Key", "client-secret")
	for _, h := range auths() {
		if h != "|" {
			t.Fatalf("the stand-in without a key got %q", h)
		}
	}

	// D was down when A started: shown down, listed once it is up, without a restart of A.
	st := status(t, a)
	if p := peerOf(st, "d"); p.State != "down" || p.Error == "" {
		t.Fatalf("d: %+v", p)
	}
	d.start()
	a.waitModel("delta", "", 60*time.Second)
	a.chatOK("delta")

	// C killed mid-stream.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := a.post(ctx, "/v1/chat/completions", string(chatBody("peer:c/gamma", true, 2000)))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", resp, err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	c.kill()
	rest, err := io.ReadAll(br)
	resp.Body.Close()
	if err != nil || !strings.Contains(string(rest), "peer_unreachable") || !strings.Contains(string(rest), "peer c (") || time.Since(killed) > 10*time.Second {
		t.Fatalf("after the kill: %v after %v: ...%s", err, time.Since(killed), lastBytes(rest))
	}
	a.chatFails("peer:c/gamma", "c")
	a.waitModel("peer:c/gamma", "unavailable", 30*time.Second)
	a.chatOK("gamma") // the local gamma, untouched
	a.chatOK("alpha")
	if p := peerOf(status(t, a), "c"); p.State != "down" || p.Error == "" || len(p.Models) != 1 {
		t.Fatalf("c: %+v", p)
	}

	// C comes back by itself.
	c.start()
	testbed.WaitFor(t, 60*time.Second, "c to be up again", func() bool { return peerOf(status(t, a), "c").State == "up" })
	a.chatOK("peer:c/gamma")

	// `llamatray peer add` changes the running A, which reads the new peer at once and saves it.
	out := a.cli("peer", "add", d.base, "--name", "d2", "--api-key", "unused-key")
	if !strings.Contains(out, "peer d2 added (in the running Llamatray at "+a.base) {
		t.Fatalf("peer add: %s", out)
	}
	testbed.WaitFor(t, 30*time.Second, "d2 to be up", func() bool { return peerOf(status(t, a), "d2").State == "up" })
	a.waitModel("peer:d2/delta", "", 10*time.Second) // d, first by name, has the bare ID
	a.chatOK("peer:d2/delta")
	if text, _ := os.ReadFile(filepath.Join(a.dir, "config.toml")); !strings.Contains(string(text), "[peers.\"d2\"]") {
		t.Fatalf("d2 not saved:\n%s", text)
	}
	if out := a.cli("peer", "list"); !strings.Contains(out, "d2") || !strings.Contains(out, "up") {
		t.Fatalf("peer list: %s", out)
	}
	a.cli("peer", "rm", "d2")
	if p := peerOf(status(t, a), "d2"); p.Name != "" {
		t.Fatalf("d2 still there: %+v", p)
	}
}

// cli runs the llamatray command line as p's user (its HOME and config) and wants exit 0.
func (p *proc) cli(args ...string) string {
	p.t.Helper()
	cmd := exec.Command(buildLlamatray(p.t), append(args, "--config", filepath.Join(p.dir, "config.toml"))...)
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("llamatray %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func status(t *testing.T, p *proc) wire.Status {
	t.Helper()
	resp, err := http.Get(p.base + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st wire.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func peerOf(st wire.Status, name string) wire.Peer {
	for _, p := range st.Peers {
		if p.Name == name {
			return p
		}
	}
	return wire.Peer{}
}

func lastBytes(b []byte) []byte {
	if len(b) > 400 {
		return b[len(b)-400:]
	}
	return b
}
