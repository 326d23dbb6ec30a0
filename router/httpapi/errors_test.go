package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/releases"
)

func TestErrorFor(t *testing.T) {
	code := 137
	cases := []struct {
		name       string
		err        error
		status     int
		typ, code  string
		retryAfter string // "" → no header
		contains   string
	}{
		{"hostile tag", fmt.Errorf("llama.cpp release tag %q: %w", "state.json", releases.ErrBadTag), 502, "server_error", "release_refused", "", "state.json"},
		{"hostile archive", fmt.Errorf("unpacking x.zip: %w", releases.ErrUnsafe), 502, "server_error", "release_refused", "", "x.zip"},
		{"hostile hub path", fmt.Errorf("org/r: %w: file path %q is absolute", hub.ErrUnsafe, "/etc/x"), 502, "server_error", "hub_answer_refused", "", "/etc/x"},
		{"endless hub listing", fmt.Errorf("org/r: %w", hub.ErrTooLarge), 502, "server_error", "hub_answer_refused", "", "org/r"},
		{"hub unreachable", fmt.Errorf("%w at https://huggingface.co: its name does not resolve", hub.ErrUnreachable), 502, "server_error", "hub_unreachable", "", "does not resolve"},
		{"unknown", &engine.UnknownModelError{Name: "qwen", Suggestions: []string{"qwen2.5-7b", "qwen3-8b"}}, 404, "invalid_request_error", "model_not_found", "", "qwen2.5-7b, qwen3-8b"},
		{"unknown wrapped", fmt.Errorf("acquire: %w", &engine.UnknownModelError{Name: "x"}), 404, "invalid_request_error", "model_not_found", "", `"x"`},
		{"queue timeout", &engine.QueueTimeoutError{Model: "m", Waited: time.Minute, RetryAfter: 2500 * time.Millisecond}, 503, "server_error", "queue_timeout", "3", "no memory or slot"},
		{"queue timeout no hint", &engine.QueueTimeoutError{Model: "m"}, 503, "server_error", "queue_timeout", "1", ""},
		{"load failed", &engine.LoadError{Model: "m", Reason: "exited", ExitCode: &code, LogTail: []string{"a", "b", "", "llama_model_load: error loading model", ""}, RetryAt: time.Now().Add(9500 * time.Millisecond)}, 503, "server_error", "model_load_failed", "10", "exit code 137); last log lines:\na\nb\n\nllama_model_load: error loading model"},
		{"load failed no retry", &engine.LoadError{Model: "m", Reason: "timeout"}, 503, "server_error", "model_load_failed", "", "timeout"},
		{"too large", &engine.TooLargeError{Model: "m", Need: 64 << 30, Budget: 16 << 30}, 507, "server_error", "model_too_large", "", "65536 MiB"},
		{"no server", &engine.NoServerError{Hint: "brew install llama.cpp"}, 503, "server_error", "llama_server_not_found", "", "brew install llama.cpp"},
		{"closed", engine.ErrClosed, 503, "server_error", "shutting_down", "", "shutting down"},
		{"closed wrapped", fmt.Errorf("x: %w", engine.ErrClosed), 503, "server_error", "shutting_down", "", ""},
		{"body too large", &http.MaxBytesError{Limit: 64 << 20}, 413, "invalid_request_error", "body_too_large", "", "64 MiB"},
		{"body read", fmt.Errorf("%w: %w", errBodyRead, io.ErrUnexpectedEOF), 400, "invalid_request_error", "body_read_failed", "", "unexpected EOF"},
		{"body timeout", fmt.Errorf("%w (body timeout 2m0s): %w", errBodyTimeout, os.ErrDeadlineExceeded), 408, "invalid_request_error", "body_timeout", "", "did not arrive in time"},
		{"cross-site outbound", errCrossSiteOutbound, 403, "permission_error", "origin_not_allowed", "", "another site may not make Llamatray contact the Hugging Face Hub"},
		{"invalid json", fmt.Errorf("%w: bad", errInvalidJSON), 400, "invalid_request_error", "invalid_json", "", "bad"},
		{"model required", errModelRequired, 400, "invalid_request_error", "model_required", "", "missing"},
		{"unauthorized", errUnauthorized, 401, "authentication_error", "invalid_api_key", "", ""},
		{"host", errHostNotAllowed, 403, "permission_error", "host_not_allowed", "", ""},
		{"origin", errOriginForbidden, 403, "permission_error", "origin_not_allowed", "", ""},
		{"not found", errNotFound, 404, "invalid_request_error", "not_found", "", ""},
		{"method", errMethod, 405, "invalid_request_error", "method_not_allowed", "", ""},
		{"upstream", fmt.Errorf("%w: dial", errUpstream), 502, "server_error", "upstream_error", "", "dial"},
		{"client gone", context.Canceled, statusClientClosed, "server_error", "client_closed", "", ""},
		{"deadline", context.DeadlineExceeded, 504, "server_error", "timeout", "", ""},
		{"other", errors.New("boom"), 500, "server_error", "internal_error", "", "boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := errorFor(tc.err)
			if e.Status != tc.status || e.Type != tc.typ || e.Code != tc.code {
				t.Fatalf("got %d %s %s", e.Status, e.Type, e.Code)
			}
			ra := ""
			if e.RetryAfter > 0 {
				ra = retryAfterSeconds(e.RetryAfter)
			}
			if ra != tc.retryAfter {
				t.Fatalf("Retry-After %q, want %q", ra, tc.retryAfter)
			}
			if !strings.Contains(e.Message, tc.contains) {
				t.Fatalf("message %q lacks %q", e.Message, tc.contains)
			}
		})
	}
}

// TestAcquireErrorsOverHTTP checks the status, error code and Retry-After a client sees for each
// engine error, and that a failed Acquire holds no lease.
func TestAcquireErrorsOverHTTP(t *testing.T) {
	up, _ := recordingUpstream(t)
	srv, fe, _ := testRouter(t, up.URL, nil)
	for _, tc := range []struct {
		err        error
		status     int
		code, ra   string
		inResponse string
	}{
		{&engine.QueueTimeoutError{Model: "m1", RetryAfter: 30 * time.Second}, 503, "queue_timeout", "30", "busy"},
		{&engine.LoadError{Model: "m1", Reason: "crashed", LogTail: []string{"CUDA error: out of memory"}}, 503, "model_load_failed", "", "CUDA error: out of memory"},
		{&engine.NoServerError{Hint: "install llama.cpp"}, 503, "llama_server_not_found", "", "install llama.cpp"},
		{&engine.TooLargeError{Model: "m1", Need: 1 << 40, Budget: 1 << 30}, 507, "model_too_large", "", "needs"},
		{engine.ErrClosed, 503, "shutting_down", "", "shutting down"},
	} {
		fe.mu.Lock()
		fe.acquire = func(context.Context, string) (*engine.Lease, error) { return nil, tc.err }
		fe.mu.Unlock()
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m1"}`))
		if err != nil {
			t.Fatal(err)
		}
		_, code, msg := decodeError(t, resp)
		resp.Body.Close()
		if resp.StatusCode != tc.status || code != tc.code || resp.Header.Get("Retry-After") != tc.ra || !strings.Contains(msg, tc.inResponse) {
			t.Errorf("%T: %d %q Retry-After %q %q", tc.err, resp.StatusCode, code, resp.Header.Get("Retry-After"), msg)
		}
	}
	if fe.active("m1") != 0 {
		t.Fatal("lease held after failed acquires")
	}
}

// Ollama's API says when to retry as every other route does: whole seconds, rounded up.
func TestRetryAfterRoundsUpOnEveryAPI(t *testing.T) {
	up, _ := recordingUpstream(t)
	srv, fe, _ := testRouter(t, up.URL, nil)
	wait := &engine.QueueTimeoutError{Model: "m1", RetryAfter: 2500 * time.Millisecond}
	fe.mu.Lock()
	fe.acquire = func(context.Context, string) (*engine.Lease, error) { return nil, wait }
	fe.loadErr = wait
	fe.mu.Unlock()
	for path, body := range map[string]string{
		"/v1/chat/completions": `{"model":"m1"}`,
		"/api/chat":            `{"model":"m1","messages":[]}`, // nothing to answer: Ollama's load
	} {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "3" {
			t.Errorf("%s: %d Retry-After %q, want 503 and 3", path, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
}
