package app

import (
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/hub"
	"github.com/llamatray/llamatray/router/service"
	"github.com/llamatray/llamatray/router/view"
)

// A failed download reads as what happened and what to do: no address, no Go error chain, no
// sentence twice, and a checksum failure does not claim what came is kept.
func TestPullTrouble(t *testing.T) {
	for _, c := range []struct {
		err, want string
		kept      bool
	}{
		{`cannot reach the Hugging Face Hub at https://huggingface.co: its name does not resolve: is this computer offline? (Get "https://huggingface.co/api/models/x": dial tcp: lookup huggingface.co: no such host)`,
			"The Hugging Face Hub cannot be reached: is this computer offline? What came is kept; Retry goes on from there.", true},
		{`Get "https://huggingface.co/x/resolve/main/a.gguf": dial tcp 10.0.0.1:443: connect: connection reset by peer`,
			"The connection to the Hub broke off. What came is kept; Retry goes on from there.", true},
		{`org/repo: a.gguf: sha256 mismatch (the Hub lists abc, the download is def): refused and deleted`,
			"What came does not match the checksum the Hub lists, so it was deleted: Retry downloads it again.", false},
		{`org/repo: HTTP 401: this repo is gated or private and no Hugging Face token is set: accept its terms on the Hub, then set HF_TOKEN or log in with ` + "`hf auth login`",
			"This model is gated: accept its terms on its Hub page, paste a token with access in Settings' Hugging Face token field, then Retry.", true},
		{`write /cache/blobs/x.incomplete: no space left on device`,
			"The disk is full: free some room, then Retry. What came is kept; Retry goes on from there.", true},
		{`unexpected answer from https://example.org/x (status 500)`,
			"Unexpected answer from the Hub. What came is kept; Retry goes on from there.", true},
	} {
		got, kept := pullTrouble(c.err)
		if got != c.want || kept != c.kept {
			t.Errorf("pullTrouble(%q) = %q, %v; want %q, %v", c.err, got, kept, c.want, c.kept)
		}
		for _, bad := range []string{"http://", "https://", "dial tcp"} {
			if strings.Contains(got, bad) {
				t.Errorf("pullTrouble(%q) = %q: has %q", c.err, got, bad)
			}
		}
	}
	// The Downloads row of a checksum failure: no share done, nothing said to be kept.
	text := downloadText(hub.PullStatus{Model: "a/b:Q4", State: hub.StateFailed, Progress: hub.Progress{Done: 100, Total: 100},
		Error: "a/b: x.gguf: sha256 mismatch (the Hub lists 1, the download is 2): refused and deleted"})
	if strings.Contains(text, "100%") || strings.Contains(text, "kept") {
		t.Errorf("checksum failure reads %q", text)
	}
}

// A failed load names the line of llama-server's output that explains it, not the last one, and
// what fixes it.
func TestLoadCause(t *testing.T) {
	logs := []string{
		"llama_model_loader: loaded meta data with 20 key-value pairs",
		"llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'qwen9'",
		"llama_model_load_from_file_impl: failed to load model",
		"common_init_from_params: failed to load model '/m/x.gguf'",
		"srv    load_model: failed to load model, '/m/x.gguf'",
		"main: exiting due to model loading error",
	}
	cause, do, fix := loadCause(logs)
	if cause != "unknown model architecture: 'qwen9'" || fix != fixServer || !strings.Contains(do, "newer llama.cpp build") {
		t.Errorf("loadCause = %q, %q, %v", cause, do, fix)
	}
	cause, _, fix = loadCause([]string{"ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 9000000000", "main: exiting due to model loading error"})
	if !strings.HasPrefix(cause, "failed to allocate buffer") || fix != fixSettings {
		t.Errorf("out of memory: %q, %v", cause, fix)
	}
	if cause, _, _ := loadCause([]string{"all fine"}); cause != "" {
		t.Errorf("a cause %q from nothing", cause)
	}

	// The row shows it and offers the fix first.
	m := Model{Model: view.Model{ModelStatus: service.ModelStatus{ID: "x", State: service.StateFailed, Error: "llama-server exited while loading: exit status 1 (last output: \"main: exiting due to model loading error\")"}}}
	m.Cause, m.CauseDo, m.Fix = loadCause(logs)
	r := rowFor(service.Budget{}, m, now())
	if !strings.Contains(r.Error, "unknown model architecture") || strings.Contains(r.Error, "exiting due to") {
		t.Errorf("row error %q", r.Error)
	}
	if len(r.Buttons) == 0 || r.Buttons[0].Label != "Settings…" {
		t.Errorf("row buttons %+v: the fix is not first", r.Buttons)
	}
}

// Saving settings the running models cannot take says so, naming them and the settings.
func TestNotAppliedToRunning(t *testing.T) {
	old := settingsValues{IdleSleep: "5m", CtxSize: "4096"}
	v := old
	v.IdleSleep = "1m"
	if got := notAppliedToRunning(old, v, nil); got != "" {
		t.Errorf("nothing runs, yet %q", got)
	}
	got := notAppliedToRunning(old, v, []string{"qwen"})
	if got != "Running now, qwen keeps the old sleep when idle until loaded again: Unload and Load to use the new." {
		t.Errorf("got %q", got)
	}
	v.MemoryLimit = "8GB"
	if got := notAppliedToRunning(old, settingsValues{IdleSleep: "5m", CtxSize: "4096", MemoryLimit: "8GB"}, []string{"qwen"}); got != "" {
		t.Errorf("a memory limit applies at once, yet %q", got)
	}
}
