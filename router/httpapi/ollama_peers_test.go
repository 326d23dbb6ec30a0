package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/ollama"
	"github.com/llamatray/llamatray/router/peer"
)

// statusPeer is a peer that lists models with the states given (model: state, "" for none) and
// answers chat completions naming itself (label) and the model it got.
func statusPeer(t *testing.T, label string, models map[string]string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/models" {
			data := []map[string]any{}
			for id, st := range models {
				e := map[string]any{"id": id, "owned_by": "llamatray"}
				if st != "" {
					e["status"] = map[string]any{"value": st}
				}
				data = append(data, e)
			}
			// a model the peer has from its own peer: never listed here (one hop only)
			data = append(data, map[string]any{"id": "hop", "owned_by": "peer:far"})
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
			return
		}
		var req struct{ Model string }
		_ = json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","model":"`+req.Model+`","choices":[{"index":0,"message":{"role":"assistant","content":"from `+label+"/"+req.Model+`"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func getJSONVia(t *testing.T, u string, into any, header ...string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return resp.StatusCode
}

func tagsByName(t *testing.T, u string, header ...string) map[string]ollama.ListModel {
	t.Helper()
	var l ollama.ListResponse
	if code := getJSONVia(t, u, &l, header...); code != 200 {
		t.Fatalf("GET %s: %d", u, code)
	}
	out := map[string]ollama.ListModel{}
	for _, m := range l.Models {
		if _, dup := out[m.Name]; dup {
			t.Fatalf("%s listed twice: %+v", m.Name, l.Models)
		}
		out[m.Name] = m
	}
	return out
}

var hexDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)

// TestPeerOllamaTags: /api/tags lists an answering peer's models by the names a request takes them
// by (a bare ID with ":latest"; "peer:NAME/ID" where a local model, or its alias, has the name),
// with a stable digest of their own; a peer that is down is left out; a request that came from a
// peer gets the local models only.
func TestPeerOllamaTags(t *testing.T) {
	a := statusPeer(t, "box", map[string]string{"pm": "loaded", "m1": "loaded", "fast": "", "cold": "unloaded", "tagged:q4": ""})
	b := statusPeer(t, "other", map[string]string{"pm": "loaded", "bm": "loaded"})
	down := statusPeer(t, "off", map[string]string{"gone": "loaded"})
	srv, _, ps := peerRouter(t, peer.Spec{Name: "box", URL: a.URL}, peer.Spec{Name: "other", URL: b.URL}, peer.Spec{Name: "off", URL: down.URL})
	for _, n := range []string{"box", "other", "off"} {
		waitPeerState(t, ps, n, peer.StateUp)
	}
	down.Close()
	ps.Poke("off")
	waitPeerState(t, ps, "off", peer.StateDown)

	tags := tagsByName(t, srv.URL+"/api/tags")
	want := []string{"m1:latest", "pm:latest", "peer:box/m1", "peer:box/fast", "cold:latest", "tagged:q4", "peer:other/pm", "bm:latest"}
	for _, n := range want {
		if _, ok := tags[n]; !ok {
			t.Errorf("%s not listed: %v", n, tags)
		}
	}
	for _, n := range []string{"gone:latest", "peer:off/gone", "hop:latest", "fast:latest", "m1"} {
		if _, ok := tags[n]; ok {
			t.Errorf("%s listed: %+v", n, tags[n])
		}
	}
	if len(tags) != len(want) {
		t.Errorf("listed %d, want %d: %v", len(tags), len(want), tags)
	}
	pm := tags["pm:latest"]
	if pm.Model != "pm:latest" || pm.Size != 0 || !hexDigest.MatchString(pm.Digest) || pm.Digest == tags["peer:other/pm"].Digest ||
		pm.Digest == tags["m1:latest"].Digest || pm.ModifiedAt.IsZero() || pm.Details.Family != "" || len(pm.Capabilities) == 0 {
		t.Fatalf("%+v", pm)
	}
	if again := tagsByName(t, srv.URL+"/api/tags"); again["pm:latest"].Digest != pm.Digest || again["peer:box/m1"].Digest != tags["peer:box/m1"].Digest {
		t.Fatal("digests changed between two lists")
	}
	if local := tags["m1:latest"]; local.Size != 4<<30 || local.Details.Family != "llama" {
		t.Fatalf("the local model changed: %+v", local)
	}

	// Each listed name takes a chat to the model it names.
	for name, wantModel := range map[string]string{"pm:latest": "box/pm", "peer:box/m1": "box/m1", "peer:box/fast": "box/fast", "cold:latest": "box/cold",
		"tagged:q4": "box/tagged:q4", "peer:other/pm": "other/pm", "bm:latest": "other/bm"} {
		resp := peerPost(t, srv.URL+"/api/chat", `{"model":"`+name+`","stream":false,"messages":[{"role":"user","content":"x"}]}`)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(body), "from "+wantModel) {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, body)
		}
	}

	// From a peer: local models only.
	via := tagsByName(t, srv.URL+"/api/tags", peer.ViaHeader, "1")
	if len(via) != 1 || via["m1:latest"].Name == "" {
		t.Fatalf("from a peer: %v", via)
	}
}

// TestPeerOllamaPS: /api/ps lists the peers' models their peer reports loaded, not the others,
// and none to a request that came from a peer.
func TestPeerOllamaPS(t *testing.T) {
	a := statusPeer(t, "box", map[string]string{"pm": "loaded", "cold": "unloaded", "quiet": ""})
	srv, _, ps := peerRouter(t, peer.Spec{Name: "box", URL: a.URL})
	waitPeerState(t, ps, "box", peer.StateUp)
	var l ollama.ProcessResponse
	if code := getJSONVia(t, srv.URL+"/api/ps", &l); code != 200 {
		t.Fatal(code)
	}
	names := map[string]ollama.ProcessModel{}
	for _, m := range l.Models {
		names[m.Name] = m
	}
	if len(names) != 2 || names["m1:latest"].Name == "" || names["pm:latest"].SizeVRAM != 0 || !hexDigest.MatchString(names["pm:latest"].Digest) {
		t.Fatalf("%+v", l.Models)
	}
	if code := getJSONVia(t, srv.URL+"/api/ps", &l, peer.ViaHeader, "1"); code != 200 || len(l.Models) != 1 || l.Models[0].Name != "m1:latest" {
		t.Fatalf("from a peer: %d %+v", code, l.Models)
	}
}

// TestPeerOllamaShow: /api/show answers for a peer's model, by its listed name or its ref, with
// what is known (no model_info); a name no peer lists, and any peer model asked by a request that
// came from a peer, is 404.
func TestPeerOllamaShow(t *testing.T) {
	a := statusPeer(t, "box", map[string]string{"pm": "loaded", "m1": "loaded"})
	srv, _, ps := peerRouter(t, peer.Spec{Name: "box", URL: a.URL})
	waitPeerState(t, ps, "box", peer.StateUp)
	for _, name := range []string{"pm", "pm:latest", "peer:box/pm", "peer:box/m1"} {
		resp := peerPost(t, srv.URL+"/api/show", `{"model":"`+name+`"}`)
		var s ollama.ShowResponse
		body, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(body, &s); err != nil || resp.StatusCode != 200 || len(s.ModelInfo) != 0 || s.ModelInfo == nil ||
			!strings.Contains(s.Modelfile, "peer box") || s.Details.Family != "" || len(s.Capabilities) == 0 || s.ModifiedAt.IsZero() {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, body)
		}
		if !strings.Contains(string(body), `"model_info":{}`) {
			t.Fatalf("%s: %s", name, body)
		}
	}
	// The local model is shown as before.
	resp := peerPost(t, srv.URL+"/api/show", `{"model":"m1"}`)
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !strings.Contains(string(body), `"general.architecture":"llama"`) {
		t.Fatalf("local: %d %s", resp.StatusCode, body)
	}
	for _, c := range []struct{ name, via string }{{"peer:box/nope", ""}, {"peer:nobody/pm", ""}, {"pm", "1"}, {"peer:box/pm", "1"}} {
		resp := peerPost(t, srv.URL+"/api/show", `{"model":"`+c.name+`"}`, peer.ViaHeader, c.via)
		if body, _ := io.ReadAll(resp.Body); resp.StatusCode != 404 {
			t.Fatalf("%s (via %q): %d %s", c.name, c.via, resp.StatusCode, body)
		}
	}
}
