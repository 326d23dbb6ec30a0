package front

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// The idle deadline set after an answer stays on the connection into the next request (deadline in
// conn): a request that outlives it must neither be cancelled as if its client had left nor fail to
// read a body that arrives after it.
func TestRequestsOutliveTheIdleDeadline(t *testing.T) {
	const idle = 100 * time.Millisecond
	release := make(chan struct{})
	cause := make(chan error, 1)
	_, addr := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/wait":
			select {
			case <-release:
				cause <- nil
			case <-r.Context().Done():
				cause <- context.Cause(r.Context())
			}
			io.WriteString(w, "waited")
		default:
			echo(w, r)
		}
	}), Options{ReadHeaderTimeout: idle, IdleTimeout: idle})
	c, br := dial(t, addr)

	io.WriteString(c, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
	readResponse(t, br, "GET")
	// The answer set the idle deadline; the next request comes at once and runs three times as
	// long, long enough to be watched for its client's leaving.
	io.WriteString(c, "GET /wait HTTP/1.1\r\nHost: a\r\n\r\n")
	time.AfterFunc(3*idle, func() { close(release) })
	if _, body := readResponse(t, br, "GET"); body != "waited" {
		t.Fatalf("answer %q", body)
	}
	if err := <-cause; err != nil {
		t.Fatalf("a request longer than the idle timeout was cancelled: %v", err)
	}

	// A body whose second half comes after the idle deadline the last answer set.
	io.WriteString(c, "POST /body HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nab")
	time.Sleep(3 * idle) // the client is slow on purpose: this is the input, not a wait for state
	io.WriteString(c, "cde")
	if resp, body := readResponse(t, br, "POST"); resp.StatusCode != http.StatusOK || body != `POST /body "abcde"` {
		t.Fatalf("answer %d %q", resp.StatusCode, body)
	}

	// And the connection still closes once idle.
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("an idle connection: %v, want it closed", err)
	}
}

func TestIdleSlack(t *testing.T) {
	for _, tc := range []struct{ idle, want time.Duration }{
		{2 * time.Minute, time.Second},
		{16 * time.Second, time.Second},
		{160 * time.Millisecond, 10 * time.Millisecond},
		{0, 0},
	} {
		if got := idleSlack(tc.idle); got != tc.want {
			t.Errorf("idleSlack(%v) = %v, want %v", tc.idle, got, tc.want)
		}
	}
}
