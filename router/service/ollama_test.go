package service

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// With ollama_port on, Ollama's port answers Ollama's API too; a taken port is reported and the main
// listener serves on; turning the setting off closes the port.
func TestOllamaPort(t *testing.T) {
	isolateHome(t)
	models := t.TempDir()
	if err := ggufwrite.WriteFile(filepath.Join(models, "m.gguf"), ggufwrite.Header(ggufwrite.HeaderOptions{Blocks: 2, Embedding: 64})); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg.ModelDirs, cfg.ScanDefaultDirs, cfg.LlamaServer = []string{models}, false, "/nonexistent/llama-server"
	cfg.OllamaPort = true
	ollamaAddr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	svc := startedServiceWith(t, cfg, Options{OllamaAddr: ollamaAddr})
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("http://" + ollamaAddr + "/api/tags"); code != 200 || !strings.Contains(body, `"name":"m:latest"`) {
		t.Fatalf("Ollama's port: %d %s", code, body)
	}
	if addr, err := svc.OllamaListen(); addr != ollamaAddr || err != nil || svc.setup().OllamaListen != ollamaAddr {
		t.Errorf("listening on %q, %v", addr, err)
	}

	off := svc.Config()
	off.OllamaPort = false
	if err := svc.Edit(func(c *config.Config) error { *c = off.Clone(); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("tcp", ollamaAddr, time.Second); err == nil {
		t.Error("Ollama's port still answers with ollama_port off")
	}

	// Taken by another program (Ollama itself): said, and the main address still serves.
	ln, err := net.Listen("tcp", ollamaAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	on := svc.Config()
	on.OllamaPort = true
	if err := svc.Edit(func(c *config.Config) error { *c = on.Clone(); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.OllamaListen(); err == nil || !strings.Contains(err.Error(), "is Ollama itself running") {
		t.Errorf("taken port: %v", err)
	}
	if st := svc.setup(); !strings.Contains(st.OllamaError, ollamaAddr) {
		t.Errorf("status: %+v", st)
	}
	if code, _ := get("http://" + cfg.Listen + "/api/tags"); code != 200 {
		t.Errorf("the main address: %d", code)
	}
}
