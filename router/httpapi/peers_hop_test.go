package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llamatray/llamatray/router/peer"
)

// TestPeerOneHop: two instances that are each other's peers. A request that came from a peer is
// never sent on to another, "peer:NAME/ID" included, so a nested ref cannot bounce between them;
// it is answered 404 in its family's shape. A ref whose ID is itself a ref is refused at once.
func TestPeerOneHop(t *testing.T) {
	var hopsA, hopsB atomic.Int64 // requests that arrived from a peer
	count := func(h http.Handler, n *atomic.Int64) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(peer.ViaHeader) != "" {
				n.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	}
	psA, psB := fastPeers(), fastPeers()
	t.Cleanup(psA.Close)
	t.Cleanup(psB.Close)
	la, _ := recordingUpstream(t)
	lb, _ := recordingUpstream(t)
	_, _, rtA := testRouter(t, la.URL, func(o *Options) { o.Peers = psA })
	_, _, rtB := testRouter(t, lb.URL, func(o *Options) { o.Peers = psB })
	a := httptest.NewServer(count(rtA, &hopsA))
	b := httptest.NewServer(count(rtB, &hopsB))
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	psA.Sync([]peer.Spec{{Name: "b", URL: b.URL}})
	psB.Sync([]peer.Spec{{Name: "a", URL: a.URL}})
	waitPeerState(t, psA, "b", peer.StateUp)
	waitPeerState(t, psB, "a", peer.StateUp)
	hops := func() int64 { return hopsA.Load() + hopsB.Load() }

	// One hop is fine: A sends peer:b/m1 to B, which serves its own m1.
	resp := peerPost(t, a.URL+"/v1/chat/completions", `{"model":"peer:b/m1","messages":[]}`)
	if io.Copy(io.Discard, resp.Body); resp.StatusCode != 200 || hops() != 1 {
		t.Fatalf("one hop: %d, %d requests from a peer", resp.StatusCode, hops())
	}

	// A nested ref: refused at A (its ID is a ref), never sent anywhere.
	ref := strings.Repeat("peer:b/peer:a/", 40) + "m1"
	resp = peerPost(t, a.URL+"/v1/chat/completions", `{"model":"`+ref+`","messages":[]}`)
	if _, code, msg := decodeError(t, resp); resp.StatusCode != http.StatusNotFound || code != "model_not_found" || !strings.Contains(msg, "one hop only") || hops() != 1 {
		t.Fatalf("nested ref: %d %s %q, %d requests from a peer", resp.StatusCode, code, msg, hops())
	}

	// A request that came from a peer (as B sends it) with an explicit ref stays at A: 404.
	resp = peerPost(t, a.URL+"/v1/chat/completions", `{"model":"peer:b/m1","messages":[]}`, peer.ViaHeader, "1")
	if _, code, msg := decodeError(t, resp); resp.StatusCode != http.StatusNotFound || code != "model_not_found" || !strings.Contains(msg, "came from a peer") || hops() != 2 {
		t.Fatalf("explicit ref from a peer: %d %s %q, %d requests from a peer", resp.StatusCode, code, msg, hops())
	}

	// Ollama's endpoints: the same, in Ollama's shape.
	resp = peerPost(t, a.URL+"/api/chat", `{"model":"peer:b/m1","stream":false,"messages":[{"role":"user","content":"x"}]}`, peer.ViaHeader, "1")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"error":"model`) || hops() != 3 {
		t.Fatalf("ollama, explicit ref from a peer: %d %s, %d requests from a peer", resp.StatusCode, body, hops())
	}
	resp = peerPost(t, a.URL+"/api/chat", `{"model":"`+ref+`","stream":false,"messages":[{"role":"user","content":"x"}]}`)
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"error":"model`) || hops() != 3 {
		t.Fatalf("ollama, nested ref: %d %s, %d requests from a peer", resp.StatusCode, body, hops())
	}
}
