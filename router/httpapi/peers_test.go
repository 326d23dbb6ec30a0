package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/peer"
	"github.com/llamatray/llamatray/router/wire"
)

// peerStandIn is another machine's server: it lists models, records what reaches it, and answers
// chat completions, streamed when asked; a stream for model "cut" is cut after its first event.
type peerStandIn struct {
	srv  *httptest.Server
	mu   sync.Mutex // guards seen
	seen []seen
}

func newPeerStandIn(t *testing.T, models ...string) *peerStandIn {
	p := &peerStandIn{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.seen = append(p.seen, seen{Method: r.Method, Path: r.URL.Path, Body: body, Header: r.Header.Clone()})
		p.mu.Unlock()
		if r.URL.Path == "/v1/models" {
			var data []map[string]any
			for _, m := range models {
				data = append(data, map[string]any{"id": m, "owned_by": "llamatray", "status": map[string]any{"value": "loaded"}})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
			return
		}
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","model":"`+req.Model+`","choices":[{"index":0,"message":{"role":"assistant","content":"from peer"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"hi"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		if req.Model == "cut" {
			conn, _, _ := http.NewResponseController(w).Hijack()
			_ = conn.Close()
			return
		}
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// last is the last request that was not a list read.
func (p *peerStandIn) last(t *testing.T) seen {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.seen) - 1; i >= 0; i-- {
		if p.seen[i].Path != "/v1/models" {
			return p.seen[i]
		}
	}
	t.Fatal("no request reached the peer")
	return seen{}
}

func fastPeers() *peer.Set {
	return peer.New(peer.Options{Refresh: time.Hour, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, PollTimeout: 2 * time.Second, DialTimeout: 2 * time.Second})
}

// waitPeerState waits on the set's changes until peer name is in state.
func waitPeerState(t *testing.T, ps *peer.Set, name, state string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		ch := ps.Changed()
		if i, ok := ps.Peer(name); ok && i.State == state {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			i, _ := ps.Peer(name)
			t.Fatalf("peer %s never %s: %+v", name, state, i)
		}
	}
}

func peerRouter(t *testing.T, specs ...peer.Spec) (*httptest.Server, chan seen, *peer.Set) {
	return peerRouterPoke(t, 0, specs...)
}

// peerRouterPoke is peerRouter reading a silent peer's list again after poke (0: peer.Poke).
func peerRouterPoke(t *testing.T, poke time.Duration, specs ...peer.Spec) (*httptest.Server, chan seen, *peer.Set) {
	local, localSeen := recordingUpstream(t)
	ps := fastPeers()
	t.Cleanup(ps.Close)
	ps.Sync(specs)
	srv, _, _ := testRouter(t, local.URL, func(o *Options) { o.Peers = ps }, func(s *Server) { s.peerPoke = poke })
	return srv, localSeen, ps
}

func peerPost(t *testing.T, u, body string, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestPeerRoutingAndKeys(t *testing.T) {
	a := newPeerStandIn(t, "pm", "m1")
	b := newPeerStandIn(t, "bm")
	srv, localSeen, ps := peerRouter(t, peer.Spec{Name: "box", URL: a.srv.URL, APIKey: "key-a"}, peer.Spec{Name: "nokey", URL: b.srv.URL})
	waitPeerState(t, ps, "box", peer.StateUp)
	waitPeerState(t, ps, "nokey", peer.StateUp)

	resp := peerPost(t, srv.URL+"/v1/chat/completions", `{"model":"pm","messages":[{"role":"user","content":"x"}]}`, "Authorization", "Bearer client-key", "X-Api-Key", "client-key")
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !strings.Contains(string(b), "from peer") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	got := a.last(t)
	if got.Header.Get("Authorization") != "Bearer key-a" || got.Header.Get("X-Api-Key") != "" || got.Header.Get(peer.ViaHeader) == "" {
		t.Fatalf("peer got headers %v", got.Header)
	}

	// The peer without a key gets none: neither the client's nor another peer's.
	resp = peerPost(t, srv.URL+"/v1/chat/completions", `{"model":"bm","messages":[]}`, "Authorization", "Bearer client-key")
	_, _ = io.ReadAll(resp.Body)
	if got := b.last(t); resp.StatusCode != 200 || got.Header.Get("Authorization") != "" {
		t.Fatalf("%d, peer without a key got Authorization %q", resp.StatusCode, got.Header.Get("Authorization"))
	}

	// A local model of the same ID wins; peer:NAME/ID reaches the peer's, with the peer's ID.
	resp = peerPost(t, srv.URL+"/v1/chat/completions", `{"model":"m1","messages":[]}`)
	_, _ = io.ReadAll(resp.Body)
	select {
	case s := <-localSeen:
		if s.Path != "/v1/chat/completions" {
			t.Fatal(s.Path)
		}
	default:
		t.Fatal("the local m1 was not used")
	}
	resp = peerPost(t, srv.URL+"/v1/chat/completions", `{"model":"peer:box/m1","messages":[]}`)
	_, _ = io.ReadAll(resp.Body)
	if got := a.last(t); resp.StatusCode != 200 || !strings.Contains(string(got.Body), `"model":"m1"`) {
		t.Fatalf("%d body to peer %s", resp.StatusCode, got.Body)
	}

	// A request that came from a peer goes to local models only.
	resp = peerPost(t, srv.URL+"/v1/chat/completions", `{"model":"pm","messages":[]}`, peer.ViaHeader, "1")
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a request from a peer was passed on: %d", resp.StatusCode)
	}
	resp = peerPost(t, srv.URL+"/v1/chat/completions", `{"model":"peer:nobody/x","messages":[]}`)
	if _, code, _ := decodeError(t, resp); resp.StatusCode != http.StatusNotFound || code != "model_not_found" {
		t.Fatalf("%d %s", resp.StatusCode, code)
	}
}

func TestPeerListings(t *testing.T) {
	a := newPeerStandIn(t, "pm", "m1")
	srv, _, ps := peerRouter(t, peer.Spec{Name: "box", URL: a.srv.URL, APIKey: "secret"})
	waitPeerState(t, ps, "box", peer.StateUp)
	resp, err := http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var l wire.ModelList
	_ = json.NewDecoder(resp.Body).Decode(&l)
	resp.Body.Close()
	byID := map[string]wire.Model{}
	for _, m := range l.Data {
		byID[m.ID] = m
	}
	if byID["m1"].OwnedBy != "llamatray" || byID["pm"].OwnedBy != "peer:box" || byID["pm"].Status.Value != "loaded" ||
		byID["peer:box/m1"].OwnedBy != "peer:box" || len(byID["pm"].Aliases) != 1 || byID["pm"].Aliases[0] != "peer:box/pm" {
		t.Fatalf("%+v", l.Data)
	}
	resp, _ = http.Get(srv.URL + "/v1/models/pm")
	var one wire.Model
	_ = json.NewDecoder(resp.Body).Decode(&one)
	resp.Body.Close()
	if resp.StatusCode != 200 || one.OwnedBy != "peer:box" {
		t.Fatalf("%d %+v", resp.StatusCode, one)
	}
	resp, _ = http.Get(srv.URL + "/api/status")
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var st wire.Status
	_ = json.Unmarshal(raw, &st)
	if len(st.Peers) != 1 || st.Peers[0].State != "up" || len(st.Peers[0].Models) != 2 || !st.Peers[0].HasKey || strings.Contains(string(raw), "secret") {
		t.Fatalf("%s", raw)
	}
}

// TestPeerDown: a peer that does not answer fails its requests at once with a 502 naming it, its
// models are shown unavailable, and local models are untouched.
func TestPeerDown(t *testing.T) {
	a := newPeerStandIn(t, "pm")
	srv, _, ps := peerRouter(t, peer.Spec{Name: "box", URL: a.srv.URL})
	waitPeerState(t, ps, "box", peer.StateUp)
	a.srv.Close()
	start := time.Now()
	resp := peerPost(t, srv.URL+"/v1/chat/completions", `{"model":"pm","messages":[]}`)
	_, code, msg := decodeError(t, resp)
	if resp.StatusCode != http.StatusBadGateway || code != "peer_unreachable" || !strings.Contains(msg, "peer box ("+a.srv.URL+")") || time.Since(start) > 10*time.Second {
		t.Fatalf("%d %s %q after %v", resp.StatusCode, code, msg, time.Since(start))
	}
	waitPeerState(t, ps, "box", peer.StateDown)
	resp, _ = http.Get(srv.URL + "/v1/models")
	var l wire.ModelList
	_ = json.NewDecoder(resp.Body).Decode(&l)
	resp.Body.Close()
	for _, m := range l.Data {
		if m.ID == "pm" && m.Status.Value != "unavailable" {
			t.Fatalf("%+v", m)
		}
	}
	resp = peerPost(t, srv.URL+"/v1/chat/completions", `{"model":"m1","messages":[]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("local model: %d", resp.StatusCode)
	}
}

// TestPeerHangs: a peer that takes connections but never answers fails a request within 10 s,
// once its list cannot be read either.
func TestPeerHangs(t *testing.T) {
	var hang sync.WaitGroup
	stop := make(chan struct{})
	release := sync.OnceFunc(func() { close(stop) })
	ready := make(chan struct{})
	readyOnce := sync.OnceFunc(func() { close(ready) })
	srv0 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-ready: // hangs from now on
			hang.Add(1)
			defer hang.Done()
			<-stop
		default:
			_, _ = io.WriteString(w, `{"data":[{"id":"pm"}]}`)
		}
	}))
	t.Cleanup(func() { release(); srv0.Close() })
	ps := peer.New(peer.Options{Refresh: time.Hour, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, PollTimeout: time.Second})
	t.Cleanup(ps.Close)
	ps.Sync([]peer.Spec{{Name: "slow", URL: srv0.URL}})
	local, _ := recordingUpstream(t)
	srv, _, _ := testRouter(t, local.URL, func(o *Options) { o.Peers = ps }, func(s *Server) { s.peerPoke = 200 * time.Millisecond })
	waitPeerState(t, ps, "slow", peer.StateUp)
	readyOnce()
	start := time.Now()
	resp := peerPost(t, srv.URL+"/v1/chat/completions", `{"model":"pm","messages":[]}`)
	_, code, msg := decodeError(t, resp)
	if resp.StatusCode != http.StatusBadGateway || code != "peer_unreachable" || !strings.Contains(msg, "peer slow") || time.Since(start) > 10*time.Second {
		t.Fatalf("%d %s %q after %v", resp.StatusCode, code, msg, time.Since(start))
	}
}

func TestPeerCutMidStream(t *testing.T) {
	a := newPeerStandIn(t, "cut")
	srv, _, ps := peerRouter(t, peer.Spec{Name: "box", URL: a.srv.URL})
	waitPeerState(t, ps, "box", peer.StateUp)
	resp := peerPost(t, srv.URL+"/v1/chat/completions", `{"model":"cut","stream":true,"messages":[]}`)
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the stream did not end cleanly: %v (%s)", err, b)
	}
	if !strings.Contains(string(b), `"content":"hi"`) || !strings.Contains(string(b), "peer_unreachable") || !strings.Contains(string(b), "peer box") {
		t.Fatalf("%s", b)
	}
	// Anthropic's shape for /v1/messages.
	resp = peerPost(t, srv.URL+"/v1/messages", `{"model":"cut","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"x"}]}`)
	b, err = io.ReadAll(resp.Body)
	if err != nil || !strings.Contains(string(b), "event: error\ndata: {\"error\":{\"message\":\"peer box") || !strings.Contains(string(b), `"type":"error"`) {
		t.Fatalf("%v %s", err, b)
	}
	// Ollama's shape: the error ends the NDJSON stream.
	resp = peerPost(t, srv.URL+"/api/chat", `{"model":"cut","messages":[{"role":"user","content":"x"}]}`)
	b, err = io.ReadAll(resp.Body)
	if err != nil || !strings.Contains(string(b), `"error":"peer box`) {
		t.Fatalf("%v %s", err, b)
	}
}

func TestPeerOllamaChat(t *testing.T) {
	a := newPeerStandIn(t, "pm")
	srv, _, ps := peerRouter(t, peer.Spec{Name: "box", URL: a.srv.URL})
	waitPeerState(t, ps, "box", peer.StateUp)
	resp := peerPost(t, srv.URL+"/api/chat", `{"model":"pm","stream":false,"messages":[{"role":"user","content":"x"}]}`)
	var doc struct {
		Model   string
		Message struct{ Content string }
		Done    bool
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &doc); err != nil || resp.StatusCode != 200 || doc.Message.Content != "from peer" || !doc.Done {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if got := a.last(t); got.Path != "/v1/chat/completions" || !strings.Contains(string(got.Body), `"model":"pm"`) {
		t.Fatalf("%s %s", got.Path, got.Body)
	}
}

// An Ollama request with nothing to answer for a peer's model is answered here, as loaded: the peer
// loads it with its first real request.
func TestPeerOllamaLoadOnly(t *testing.T) {
	a := newPeerStandIn(t, "pm")
	srv, _, ps := peerRouter(t, peer.Spec{Name: "box", URL: a.srv.URL})
	waitPeerState(t, ps, "box", peer.StateUp)
	resp := peerPost(t, srv.URL+"/api/chat", `{"model":"pm","messages":[]}`)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"done_reason":"load"`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.seen {
		if s.Path != "/v1/models" {
			t.Fatalf("the peer got %s", s.Path)
		}
	}
}
