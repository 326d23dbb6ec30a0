package harness

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 5}, {99, 10}, {100, 10}, {10, 1}, {1, 1}} {
		if got := Percentile(ds, tc.p); got != tc.want {
			t.Errorf("p%v = %d, want %d", tc.p, got, tc.want)
		}
	}
	if ds[0] != 5 {
		t.Error("Percentile sorted its input")
	}
	if Percentile(nil, 50) != 0 {
		t.Error("empty input")
	}
}

func TestParseStat(t *testing.T) {
	ppid, state, ok := parseStat("123 (llama (server) x) S 77 123 123 0 -1")
	if !ok || ppid != 77 || state != "S" {
		t.Fatalf("got %d %q %v", ppid, state, ok)
	}
	if _, _, ok := parseStat("garbage"); ok {
		t.Fatal("garbage parsed")
	}
}

// A child process shows in ChildrenOf while it runs and is Gone once reaped.
func TestChildrenOfAndGone(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	pid := cmd.Process.Pid
	found := false
	for _, c := range ChildrenOf(os.Getpid()) {
		found = found || c == pid
	}
	if !found || Gone(pid) {
		t.Fatalf("child %d: listed %v, gone %v", pid, found, Gone(pid))
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !Gone(pid) {
		t.Fatalf("child %d not gone after reaping: %s", pid, ProcState(pid))
	}
}

func TestErrorCode(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"code":"queue_timeout","message":"x"}}`: "queue_timeout",
		`{"error":{"code":503,"message":"Loading model"}}`: "503",
		`not json`: "",
		`{}`:       "",
	} {
		if got := errorCode([]byte(body)); got != want {
			t.Errorf("errorCode(%s) = %q, want %q", body, got, want)
		}
	}
}

// Do classifies complete, cut and abandoned streams, complete and unfinished JSON answers, and
// error answers, against a real HTTP server.
func TestDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stream", "/cut", "/long":
			w.Header().Set("Content-Type", "text/event-stream")
			n := 3
			if r.URL.Path == "/long" {
				n = 1000
			}
			for i := range n {
				if _, err := fmt.Fprintf(w, "data: {\"i\":%d}\n\n", i); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				if r.URL.Path == "/long" {
					select {
					case <-r.Context().Done():
						return
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
			if r.URL.Path == "/cut" {
				panic(http.ErrAbortHandler)
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
		case "/json":
			fmt.Fprint(w, `{"choices":[{"finish_reason":"stop","message":{"content":"hi"}}]}`)
		case "/unfinished":
			fmt.Fprint(w, `{"choices":[{"finish_reason":null}]}`)
		case "/busy":
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"code":"queue_timeout","message":"busy"}}`)
		}
	}))
	defer srv.Close()
	c := NewClient(2)
	do := func(path string, stream, abandon bool) Result {
		return Do(context.Background(), c, Request{URL: srv.URL + path, Body: ChatBody("m", stream, 8, 1), Stream: stream, Abandon: abandon})
	}
	if r := do("/stream", true, false); !r.OK() || r.TTFB <= 0 || r.Latency < r.TTFB {
		t.Errorf("stream: %+v", r)
	}
	if r := do("/cut", true, false); r.OK() || r.Err == nil || !strings.Contains(r.Err.Error(), "without [DONE]") {
		t.Errorf("cut stream: %+v", r)
	}
	start := time.Now()
	if r := do("/long", true, true); r.OK() || !r.Abandoned || time.Since(start) > 5*time.Second {
		t.Errorf("abandoned stream: %+v after %s", r, time.Since(start))
	}
	if r := do("/json", false, false); !r.OK() {
		t.Errorf("json: %+v", r)
	}
	if r := do("/unfinished", false, false); r.OK() || r.Err == nil {
		t.Errorf("unfinished json: %+v", r)
	}
	if r := do("/busy", false, false); r.OK() || r.Status != 503 || r.Code != "queue_timeout" || r.RetryAfter != "5" {
		t.Errorf("503: %+v", r)
	}
}
