package hub

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A Hub that cannot be reached gets an error that says what failed and what to do.
func TestUnreachableHubExplained(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer slow.Close()
	for _, tc := range []struct {
		endpoint string
		timeout  time.Duration
		says     string
	}{
		{refused, 0, "the connection was refused"},
		{"http://no-such-host.invalid", 0, "does not resolve"},
		{slow.URL, 200 * time.Millisecond, "did not answer in time"},
	} {
		c := &Client{Endpoint: tc.endpoint}
		ctx := context.Background()
		if tc.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, tc.timeout)
			defer cancel()
		}
		_, err := c.Search(ctx, "tiny", 1)
		if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), tc.endpoint) {
			t.Errorf("%s: %v, want it to say %q", tc.endpoint, err, tc.says)
		}
	}
}
