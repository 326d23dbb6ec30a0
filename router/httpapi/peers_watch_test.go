package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/peer"
)

// pausingPeer lists "pm" and streams one chunk of it, then goes silent: with listsToo its list
// reads hang as well from then on (the machine froze); without, the stream goes on once its list
// has been read three times during the pause (a long prompt on a peer that is still there).
func pausingPeer(t *testing.T, listsToo bool) *httptest.Server {
	var paused atomic.Bool
	reads := make(chan struct{}, 64) // a list read during the pause
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			if paused.Load() {
				if listsToo {
					<-block
					return
				}
				select {
				case reads <- struct{}{}:
				default:
				}
			}
			_, _ = io.WriteString(w, `{"data":[{"id":"pm","owned_by":"x"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		paused.Store(true)
		if listsToo {
			<-block
			return
		}
		for range 3 {
			select {
			case <-reads:
			case <-block:
				return
			}
		}
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"there"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(block) }) // before Close: it waits for the handlers
	return srv
}

func streamPM(t *testing.T, srv *httptest.Server) (string, time.Duration) {
	t.Helper()
	c := &http.Client{Timeout: 20 * time.Second}
	start := time.Now()
	resp, err := c.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"pm","stream":true,"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("after %v the stream did not end cleanly: %v (%s)", time.Since(start), err, b)
	}
	return string(b), time.Since(start)
}

// TestPeerFreezesMidStream: a peer that stops sending midway and no longer answers its list reads
// either ends the stream within 10 s with an error event naming it.
func TestPeerFreezesMidStream(t *testing.T) {
	p := pausingPeer(t, true)
	srv, _, ps := peerRouterPoke(t, 200*time.Millisecond, peer.Spec{Name: "box", URL: p.URL})
	waitPeerState(t, ps, "box", peer.StateUp)
	b, took := streamPM(t, srv)
	if took > 10*time.Second || !strings.Contains(b, `"content":"hi"`) || !strings.Contains(b, "peer_unreachable") || !strings.Contains(b, "peer box") || !strings.Contains(b, "stopped answering") {
		t.Fatalf("after %v: %s", took, b)
	}
}

// TestPeerPausesMidStream: a peer that is silent midway for several list reads but answers them
// is not cut: the stream ends as the peer ends it.
func TestPeerPausesMidStream(t *testing.T) {
	p := pausingPeer(t, false)
	srv, _, ps := peerRouterPoke(t, 100*time.Millisecond, peer.Spec{Name: "box", URL: p.URL})
	waitPeerState(t, ps, "box", peer.StateUp)
	b, _ := streamPM(t, srv)
	if !strings.Contains(b, `"content":"hi"`) || !strings.Contains(b, `"content":"there"`) || !strings.Contains(b, "[DONE]") || strings.Contains(b, "error") {
		t.Fatalf("%s", b)
	}
}
