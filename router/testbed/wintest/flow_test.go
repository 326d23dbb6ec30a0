package wintest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/client"
	"github.com/llamatray/llamatray/router/testbed"
)

// TestServe runs llamatray.exe under Wine as a user would from a terminal: `models` on first
// run writes the config under %LOCALAPPDATA%\llamatray, `serve` reads it and routes a chat and
// a stream to a child, `models`, `ps`, `load` and `unload` talk to it, a crashed child is seen
// and restarted after the backoff, and killing llamatray.exe by force ends a child that is
// still loading (which only the Job Object does: a loading child does not watch its stdin).
func TestServe(t *testing.T) {
	w := needWine(t)
	exe := needFile(t, exeEnv)
	b := newBed(t)
	const fast, slow = "wintest-fast", "wintest-slow"

	// First run: the commented default config is written under %LOCALAPPDATA%\llamatray.
	r := w.mustRun(t, 2*time.Minute, exe, "models", "--models-dir", winPath(b.models))
	for _, id := range []string{fast, slow} {
		if !strings.Contains(r.stdout, id) {
			t.Fatalf("llamatray.exe models does not list %s: %s", id, r)
		}
	}
	local := w.getenv(t, "LOCALAPPDATA")
	cfgPath := w.unixPath(t, local+`\llamatray\config.toml`)
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatalf("the first run wrote no config under %%LOCALAPPDATA%% (%s): %v", local, err)
	}
	if !strings.Contains(string(data), "listen") {
		t.Fatalf("%s is not Llamatray's default config:\n%s", cfgPath, data)
	}

	// The user edits it; serve and the client commands read it from there.
	addr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg := fmt.Sprintf("listen = %q\nmodel_dirs = ['%s']\nscan_default_dirs = false\nllama_server = '%s'\nlog_level = \"debug\"\n",
		addr, winPath(b.models), winPath(b.fake))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	s := w.startServe(t, exe)
	testbed.WaitFor(t, time.Minute, "llamatray.exe serve to answer on "+addr, func() bool {
		if s.exited() {
			t.Fatalf("llamatray.exe serve exited:\n%s", s.log(t))
		}
		resp, err := httpClient.Get("http://" + addr + "/v1/models")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	logFile := w.unixPath(t, local+`\llamatray\logs\llamatray.log`)
	if !fileExists(logFile) {
		t.Errorf("no log file under %%LOCALAPPDATA%%: %s", logFile)
	}

	t.Run("chat", func(t *testing.T) {
		resp, body := chat(t, addr, fast, false)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"content"`) {
			t.Fatalf("chat: HTTP %d: %s", resp.StatusCode, body)
		}
		if n := len(starts(t, b.record)); n != 1 {
			t.Fatalf("the chat started %d fakes, want 1", n)
		}
		if ps := w.processes(t, "llama-server.exe"); len(ps) != 1 {
			t.Fatalf("want one llama-server.exe child, have %v", ps)
		}
	})
	t.Run("stream", func(t *testing.T) {
		resp, body := chat(t, addr, fast, true)
		text, done := streamContent(t, body)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || text == "" || !done {
			t.Fatalf("stream: HTTP %d %s, content %q, [DONE] %v:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), text, done, body)
		}
	})
	t.Run("cli", func(t *testing.T) {
		r := w.mustRun(t, time.Minute, exe, "ps")
		if !lineHas(r.stdout, fast, "loaded") {
			t.Fatalf("ps does not show %s loaded: %s", fast, r)
		}
		r = w.mustRun(t, time.Minute, exe, "models")
		if !strings.Contains(r.stdout, "STATE") || !lineHas(r.stdout, fast, "loaded") || !lineHas(r.stdout, slow, "unloaded") {
			t.Fatalf("models does not show the instance's states: %s", r)
		}
		r = w.mustRun(t, time.Minute, exe, "unload", fast)
		if !strings.Contains(r.stdout, fast+" unloaded") || status(t, addr, fast).Value != "unloaded" {
			t.Fatalf("unload %s: %s (state %s)", fast, r, status(t, addr, fast).Value)
		}
		testbed.WaitFor(t, 30*time.Second, "the unloaded child to end", func() bool {
			return len(w.processes(t, "llama-server.exe")) == 0
		})
		r = w.mustRun(t, time.Minute, exe, "load", fast)
		if !strings.Contains(r.stdout, fast+" loaded") || status(t, addr, fast).Value != "loaded" {
			t.Fatalf("load %s: %s (state %s)", fast, r, status(t, addr, fast).Value)
		}
		if n := len(starts(t, b.record)); n != 2 {
			t.Fatalf("load started %d fakes in all, want 2", n)
		}
		r = w.run(t, time.Minute, exe, "load", "no-such-model")
		if r.code == 0 || !strings.Contains(r.stderr, "no-such-model") {
			t.Fatalf("load of an unknown model: %s", r)
		}
	})
	t.Run("crash", func(t *testing.T) {
		before := starts(t, b.record)
		port := childPort(t, before[len(before)-1])
		crashed := time.Now()
		if resp, err := httpClient.Post(fmt.Sprintf("http://127.0.0.1:%d/fake/crash", port), "", nil); err == nil {
			resp.Body.Close() // the fake exits as it answers; an error is as good
		}
		testbed.WaitFor(t, 30*time.Second, "the crash to be seen", func() bool {
			return status(t, addr, fast).Value == "failed"
		})
		st := status(t, addr, fast)
		if st.ExitCode == nil || *st.ExitCode != 3 || st.NextRetry == nil {
			t.Fatalf("crashed model: exit code %v, next retry %v, error %q", st.ExitCode, st.NextRetry, st.Error)
		}
		resp, body := chat(t, addr, fast, false)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("a request during the backoff: HTTP %d Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		testbed.WaitFor(t, 30*time.Second, "the backoff to pass", func() bool { return time.Now().After(*st.NextRetry) })
		// Asked again as a client honouring next_retry would. next_retry is the service's clock,
		// under Wine, compared here with this process's: read right at it, the service can still
		// be a few milliseconds short of it (the log showed a request 2 ms past the failure's second
		// told to retry), and that request is told to retry, as during the backoff. Past the
		// boundary, the model must load within a second.
		retold := 0
		testbed.WaitFor(t, time.Second, "a request after the backoff to be answered", func() bool {
			resp, body = chat(t, addr, fast, false)
			if resp.StatusCode == http.StatusServiceUnavailable {
				retold++
			}
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("a request %v after the backoff: HTTP %d: %s", time.Since(*st.NextRetry).Round(time.Millisecond), resp.StatusCode, body)
			}
			return resp.StatusCode == http.StatusOK
		})
		if retold > 0 {
			t.Logf("told to retry %d times right past next_retry", retold)
		}
		after := starts(t, b.record)
		if len(after) != len(before)+1 {
			t.Fatalf("the model was not restarted: %d starts before, %d after", len(before), len(after))
		}
		if wait := after[len(after)-1].Time.Sub(crashed); wait < time.Second {
			t.Fatalf("restarted %v after the crash, before the 1s backoff", wait)
		}
	})
	t.Run("unload --force while loading", func(t *testing.T) {
		// TerminateProcess and the job end a child that is loading (and reads no stdin yet).
		// The load request leaves first: while it waits, the engine would load the model again.
		n := len(starts(t, b.record))
		ctx, cancel := context.WithCancel(context.Background())
		loadDone := make(chan struct{})
		go func() {
			defer close(loadDone)
			_ = client.New(addr).Load(ctx, slow)
		}()
		testbed.WaitFor(t, 30*time.Second, "the slow model to start loading", func() bool {
			return len(starts(t, b.record)) > n && status(t, addr, slow).Value == "loading"
		})
		cancel()
		<-loadDone
		begun := time.Now()
		r := w.mustRun(t, time.Minute, exe, "unload", "--force", slow)
		if !strings.Contains(r.stdout, slow+" unloaded") || status(t, addr, slow).Value != "unloaded" {
			t.Fatalf("unload --force of a loading model: %s (state %s)", r, status(t, addr, slow).Value)
		}
		testbed.WaitFor(t, 15*time.Second, "the loading child to end", func() bool {
			return len(w.processes(t, "llama-server.exe")) == 1
		})
		t.Logf("a loading child was stopped in %v", time.Since(begun).Round(time.Millisecond))
	})
	t.Run("kill", func(t *testing.T) {
		n := len(starts(t, b.record))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { // loads the slow model: a minute, unless llamatray.exe dies first
			_ = client.New(addr).Load(ctx, slow)
		}()
		testbed.WaitFor(t, 30*time.Second, "the slow model to start loading", func() bool {
			return len(starts(t, b.record)) > n && status(t, addr, slow).Value == "loading"
		})
		if ps := w.processes(t, "llama-server.exe"); len(ps) != 2 {
			t.Fatalf("want two llama-server.exe children (one loaded, one loading), have %v", ps)
		}
		w.mustRun(t, time.Minute, "taskkill.exe", "/F", "/IM", "llamatray.exe")
		testbed.WaitFor(t, 30*time.Second, "llamatray.exe to end", s.exited)
		testbed.WaitFor(t, 15*time.Second, "the children of the killed llamatray.exe to end", func() bool {
			return len(w.processes(t, "llama-server.exe")) == 0
		})
	})
}

// lineHas says whether one line of out holds every one of words, as whole fields.
func lineHas(out string, words ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		all := true
		for _, w := range words {
			found := false
			for _, f := range fields {
				if f == w {
					found = true
				}
			}
			all = all && found
		}
		if all {
			return true
		}
	}
	return false
}
