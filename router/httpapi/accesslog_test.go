package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/engine"
	"github.com/llamatray/llamatray/router/testbed"
)

// logBuffer collects JSON log records from concurrent handlers.
type logBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns the "request" records logged so far.
func (b *logBuffer) records(t testing.TB) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var rec map[string]any
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if rec["msg"] == "request" {
			out = append(out, rec)
		}
	}
	return out
}

// waitRecord waits until the access log holds n request records (they are written as handlers end,
// which may be just after the client got the response).
func (b *logBuffer) waitRecord(t testing.TB, n int) []map[string]any {
	t.Helper()
	var recs []map[string]any
	testbed.WaitFor(t, 10*time.Second, fmt.Sprintf("%d access log records", n), func() bool {
		recs = b.records(t)
		return len(recs) >= n
	})
	return recs
}

func TestAccessLog(t *testing.T) {
	up, _ := recordingUpstream(t)
	logs := &logBuffer{}
	srv, fe, _ := testRouter(t, up.URL, func(o *Options) {
		o.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	})
	fe.mu.Lock()
	fe.acquire = func(ctx context.Context, id string) (*engine.Lease, error) {
		return fe.lease(id, 1234*time.Millisecond), nil
	}
	fe.mu.Unlock()

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"fast"}`))
	req.Header.Set(requestIDHeader, "rid-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	post(t, srv.URL+"/v1/chat/completions", `{"model":"nope"}`)

	recs := logs.waitRecord(t, 2)
	ok := recs[0]
	if ok["level"] != "INFO" || ok["method"] != "POST" || ok["path"] != "/v1/chat/completions" || ok["model"] != "m1" ||
		ok["status"] != 200.0 || ok["bytes"] != float64(n) || ok["request_id"] != "rid-1" ||
		ok["queue_wait"] != float64(1234*time.Millisecond) || ok["duration"] == nil {
		t.Fatalf("record %v", ok)
	}
	bad := recs[1]
	if bad["status"] != 404.0 || !strings.Contains(bad["error"].(string), "nope") || bad["request_id"] == "" {
		t.Fatalf("record %v", bad)
	}
}
