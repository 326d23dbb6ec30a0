//go:build !windows

package httpapi

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/testbed"
)

// A child on a unix socket is reached through its lease's socket: plain answers, streams, the
// passthrough; two children on two sockets each get their own requests.
func TestProxyDialsLeaseSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "lt") // short: t.TempDir paths can exceed a socket address
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	fake1, rec1 := startFakeLlamaAt(t, filepath.Join(dir, "c1.sock"), "", "FAKE_LLAMA_TOKENS=3")
	fake2, rec2 := startFakeLlamaAt(t, filepath.Join(dir, "c2.sock"), "", "FAKE_LLAMA_TOKENS=3")
	srv, fe, _ := testRouter(t, fake1, func(o *Options) { o.Catalog = nil })
	fe.add("m2", fake2)

	for _, c := range []struct{ method, path, body, want string }{
		{"GET", "/props?model=m1", "", `m1.gguf`},
		{"GET", "/props?model=m2", "", `m1.gguf`}, // both fakes' model files are named m1.gguf
		{"GET", "/upstream/m2/health", "", `"ok"`},
		{"POST", "/v1/chat/completions", `{"model":"m2","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "[DONE]"},
		{"POST", "/v1/messages", `{"model":"m1","stream":true,"max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`, "message_stop"},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(bufio.NewReader(resp.Body))
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), c.want) {
			t.Fatalf("%s %s: %d %s", c.method, c.path, resp.StatusCode, b)
		}
	}
	waitReleased(t, fe, 5)
	// Task requests are recorded: the chat went to the second fake, the message to the first.
	for rec, want := range map[string]string{rec1: "/v1/messages", rec2: "/v1/chat/completions"} {
		var paths []string
		for _, ev := range testbed.ReadRecord(t, rec) {
			if ev.Event == "request" {
				paths = append(paths, ev.Path)
			}
		}
		if len(paths) != 1 || paths[0] != want {
			t.Fatalf("%s: requests %v, want [%s]", rec, paths, want)
		}
	}
}
