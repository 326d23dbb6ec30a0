package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/peer"
)

// TestPeerRedirectNotFollowed: a peer that answers a request with a redirect elsewhere has its
// redirect passed back as its answer; the peer's key is never sent to where it points.
func TestPeerRedirectNotFollowed(t *testing.T) {
	got := make(chan string, 4)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
	}))
	t.Cleanup(other.Close)
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			_, _ = io.WriteString(w, `{"data":[{"id":"pm"}]}`)
			return
		}
		http.Redirect(w, r, other.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(p.Close)
	srv, _, ps := peerRouter(t, peer.Spec{Name: "box", URL: p.URL, APIKey: "peer-secret"})
	waitPeerState(t, ps, "box", peer.StateUp)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"pm","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || !strings.HasPrefix(resp.Header.Get("Location"), other.URL) {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	select {
	case a := <-got:
		t.Fatalf("the other service got a request (Authorization %q)", a)
	default:
	}
}
