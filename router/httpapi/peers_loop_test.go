package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/llamatray/llamatray/router/peer"
)

// openFiles is this process's open file count (Linux: /proc/self/fd; elsewhere -1).
func openFiles() int {
	if runtime.GOOS != "linux" {
		return -1
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// TestPeerLoopThroughAProxy: this instance's peer is a forwarding proxy in front of this very
// instance (as llama-swap, LiteLLM or a reverse proxy would be) that drops X-Llamatray-Via and
// lists a model of its own. A request for that model goes to the proxy, comes back, and is
// refused there, 508 naming the peer: one turn, not a recursion, and no files left open.
func TestPeerLoopThroughAProxy(t *testing.T) {
	ps := fastPeers()
	t.Cleanup(ps.Close)
	up, _ := recordingUpstream(t)
	_, _, server := testRouter(t, up.URL, func(o *Options) { o.Peers = ps }, func(s *Server) { s.flight.Max = 3 })
	a := httptest.NewServer(server)
	t.Cleanup(a.Close)
	target, _ := url.Parse(a.URL)
	var turns atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"id":"looped","object":"model","owned_by":"proxy"}]}`)
			return
		}
		turns.Add(1)
		r.Header.Del(peer.ViaHeader)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	ps.Sync([]peer.Spec{{Name: "front", URL: proxy.URL}})
	waitPeerState(t, ps, "front", peer.StateUp)

	post := func() {
		resp := peerPost(t, a.URL+"/v1/chat/completions", `{"model":"looped","messages":[{"role":"user","content":"x"}]}`)
		defer resp.Body.Close()
		_, code, msg := decodeError(t, resp)
		if resp.StatusCode != http.StatusLoopDetected || code != "peer_loop" || !strings.Contains(msg, "peer front") || !strings.Contains(msg, proxy.URL) {
			t.Fatalf("a request that loops: %d %s %q, want 508 peer_loop naming peer front and its URL", resp.StatusCode, code, msg)
		}
	}
	post()
	http.DefaultClient.CloseIdleConnections()
	before := openFiles()
	turns.Store(0)
	for range 20 {
		post()
	}
	if n := turns.Load(); n != 20 {
		t.Fatalf("20 requests took %d turns through the proxy, want 20 (one each)", n)
	}
	http.DefaultClient.CloseIdleConnections()
	if after := openFiles(); after > before+8 {
		t.Fatalf("open files %d before 20 looping requests, %d after", before, after)
	}
}

// TestPeerInFlightBound: requests in flight to one peer past the Flight's bound get 503 peer_busy
// naming it, at once; the others go through.
func TestPeerInFlightBound(t *testing.T) {
	release := make(chan struct{})
	var arrived sync.WaitGroup
	arrived.Add(3)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"id":"slow","object":"model","owned_by":"x"}]}`)
			return
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		if _, ok := body["llamatray_via"]; !ok {
			t.Errorf("a request to a peer without its llamatray_via marker: %v", body)
		}
		arrived.Done()
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(remote.Close)
	ps := fastPeers()
	t.Cleanup(ps.Close)
	up, _ := recordingUpstream(t)
	_, _, server := testRouter(t, up.URL, func(o *Options) { o.Peers = ps }, func(s *Server) { s.flight.Max = 3 })
	a := httptest.NewServer(server)
	t.Cleanup(a.Close)
	ps.Sync([]peer.Spec{{Name: "slowpeer", URL: remote.URL}})
	waitPeerState(t, ps, "slowpeer", peer.StateUp)

	codes := make(chan int, 3)
	for range 3 {
		go func() {
			resp := peerPost(t, a.URL+"/v1/chat/completions", `{"model":"slow","messages":[]}`)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	arrived.Wait()
	resp := peerPost(t, a.URL+"/v1/chat/completions", `{"model":"slow","messages":[]}`)
	_, code, msg := decodeError(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || code != "peer_busy" || !strings.Contains(msg, "peer slowpeer") {
		t.Fatalf("a 4th request in flight: %d %s %q, want 503 peer_busy naming the peer", resp.StatusCode, code, msg)
	}
	close(release)
	for range 3 {
		if c := <-codes; c != http.StatusOK {
			t.Fatalf("a request within the bound: %d", c)
		}
	}
}
