package cli

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/client"
	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/testbed/fakehub"
	"github.com/llamatray/llamatray/router/wire"
)

// interruptedPull runs `llamatray pull` of cliRepo:Q8_0, stalled halfway by the Hub, and sends
// this process SIGINT once the download reached the stall (runPull has its handler by then).
func interruptedPull(t *testing.T, fh *fakehub.Hub, cfgPath string) (int, *out) {
	t.Helper()
	started := fh.Stall(cliRepo, fakehub.FileName(cliRepo, "Q8_0"), 4096)
	type result struct {
		code int
		o    *out
	}
	done := make(chan result, 1)
	go func() {
		code, o := runCLIEnv(t, "pull", cliRepo+":Q8_0", "--config", cfgPath)
		done <- result{code, o}
	}()
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the pull never reached the Hub")
	}
	interruptSelf(t)
	select {
	case r := <-done:
		return r.code, r.o
	case <-time.After(time.Minute):
		t.Fatal("the pull did not end on SIGINT")
	}
	return 0, nil
}

// partials lists the .incomplete files of the Hub cache.
func partials(t *testing.T) []string {
	t.Helper()
	found, _ := filepath.Glob(filepath.Join(os.Getenv("HF_HOME"), "hub", "models--Org--Tiny-GGUF", "blobs", "*.incomplete"))
	return found
}

// Ctrl-C during a pull without an instance pauses it: the partial file stays and the next pull
// resumes it.
func TestPullInterruptedDirectKeepsPartial(t *testing.T) {
	fh, cfgPath := hubHome(t)
	code, o := interruptedPull(t, fh, cfgPath)
	if code == 0 || !strings.Contains(o.stderr.String(), "download paused") || !strings.Contains(o.stderr.String(), "resumes it") {
		t.Fatalf("interrupted pull: %d %q", code, o.stderr.String())
	}
	if len(partials(t)) != 1 {
		t.Fatalf("partial files after Ctrl-C: %v", partials(t))
	}
	fh.Stall(cliRepo, fakehub.FileName(cliRepo, "Q8_0"), 1<<62)
	code, o = runCLIEnv(t, "pull", cliRepo+":Q8_0", "--config", cfgPath)
	if code != 0 || !strings.Contains(o.stdout.String(), "verified (sha256) and listed as") {
		t.Fatalf("resumed pull: %d %q %q", code, o.stdout.String(), o.stderr.String())
	}
	if len(partials(t)) != 0 {
		t.Errorf("partial files after the resumed pull: %v", partials(t))
	}
}

// Ctrl-C during a pull through a running instance detaches: the instance goes on downloading.
func TestPullInterruptedThroughInstanceDetaches(t *testing.T) {
	fh, cfgPath := hubHome(t)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.LlamaServer = "/nonexistent/llama-server"
	svc := startService(t, cfg, cfgPath)
	code, o := interruptedPull(t, fh, cfgPath)
	if code == 0 || !strings.Contains(o.stderr.String(), "goes on in the running Llamatray") {
		t.Fatalf("interrupted pull: %d %q", code, o.stderr.String())
	}
	name := cliRepo + ":Q8_0"
	if st, ok := svc.Hub().Status(name); !ok || st.State != hub.StateDownloading {
		t.Fatalf("the instance's pull after the CLI was interrupted: %+v %v", st, ok)
	}
	fh.Stall(cliRepo, fakehub.FileName(cliRepo, "Q8_0"), 1<<62)
	svc.Hub().Pause(name) // the stalled connection is cut; the pull starts again with the Hub back
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if end, err := svc.Hub().Wait(ctx, name); err != nil || end.State != hub.StatePaused {
		t.Fatalf("pause: %+v %v", end, err)
	}
	code, o = runCLIEnv(t, "pull", name, "--config", cfgPath)
	if code != 0 || !strings.Contains(o.stdout.String(), "listed as") {
		t.Fatalf("pull again: %d %q %q", code, o.stdout.String(), o.stderr.String())
	}
}

// The Hub token in the shell of `llamatray pull` reaches the running instance's download of a
// gated repo, though the instance started without one.
func TestPullPassesTokenToInstance(t *testing.T) {
	fh, cfgPath := hubHome(t)
	fh.Gate(cliRepo, "hf_shell_token")
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.LlamaServer = "/nonexistent/llama-server"
	svc := startService(t, cfg, cfgPath) // HF_TOKEN is empty in its environment (hubHome)
	code, o := runCLIEnv(t, "pull", cliRepo+":Q4_K_M", "--config", cfgPath)
	if code == 0 || !strings.Contains(o.stderr.String(), "401") {
		t.Fatalf("gated pull without a token: %d %q", code, o.stderr.String())
	}
	t.Setenv("HF_TOKEN", "hf_shell_token") // only the CLI reads it now; the service read its own at start
	code, o = runCLIEnv(t, "pull", cliRepo+":Q4_K_M", "--config", cfgPath)
	if code != 0 || !strings.Contains(o.stdout.String(), "listed as") {
		t.Fatalf("gated pull with the shell's token: %d %q %q", code, o.stdout.String(), o.stderr.String())
	}
	if _, ok := svc.Catalog().Lookup(cliRepo + ":Q4_K_M"); !ok {
		t.Error("the instance does not list the pulled model")
	}
}

// A Ctrl-C that comes while the instance is still answering the request that starts the pull
// detaches from the pull the instance has begun, as one a moment later does, rather than ending
// with the request's cancellation.
func TestPullInterruptedBeforeTheInstanceAnswers(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /models/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	mux.HandleFunc("POST /models", func(w http.ResponseWriter, r *http.Request) {
		interrupt() // the user's Ctrl-C, after the instance began the pull and before its answer
		wire.Write(w, http.StatusOK, wire.PullAnswer{Success: true, Model: cliRepo + ":Q8_0", Status: hub.StateDownloading})
	})
	inst := httptest.NewServer(mux)
	defer inst.Close()
	ref, err := hub.ParseRef(cliRepo + ":Q8_0")
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	env := Env{Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" }}
	err = viaInstance{client.New(inst.URL)}.pull(ctx, ref, newProgressBar(&stderr), env)
	if !errors.Is(err, errDetached) {
		t.Fatalf("pull interrupted before the instance's answer: %v", err)
	}
}
