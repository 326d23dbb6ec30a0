package peer

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// tableSet is a Set holding these peers as their last reads left them, with no goroutine.
func tableSet(peers ...Info) *Set {
	s := &Set{peers: map[string]*poller{}}
	for _, p := range peers {
		s.peers[p.Name] = &poller{info: p}
	}
	return s
}

func TestRoute(t *testing.T) {
	s := tableSet(Info{Spec: Spec{Name: "a", URL: "http://a"}, State: StateUp, Models: []Model{{ID: "m"}, {ID: "shared"}}},
		Info{Spec: Spec{Name: "b", URL: "http://b"}, State: StateDown, Models: []Model{{ID: "shared"}}})
	localOnly := func(n string) bool { return n == "shared" }
	for _, c := range []struct {
		name     string
		set      *Set
		fromPeer bool
		peer, id string // "" peer: stays here
		err      error
	}{
		{name: "peer:a/m", set: s, peer: "a", id: "m"},
		{name: "peer:b/anything", set: s, peer: "b", id: "anything"}, // a ref names its ID verbatim
		{name: "peer:a/m", set: s, fromPeer: true, err: ErrHop},
		{name: "peer:a/peer:b/m", set: s, err: ErrHop},
		{name: "peer:zz/m", set: s, err: ErrNoPeer},
		{name: "m", set: s, peer: "a", id: "m"},
		{name: "m", set: s, fromPeer: true},
		{name: "shared", set: s},   // a local model wins
		{name: "unlisted", set: s}, // no peer lists it
		{name: "peer:a/m", set: nil},
	} {
		p, id, ok, err := c.set.Route(c.name, c.fromPeer, localOnly)
		if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("Route(%q, fromPeer %v): err %v, want %v", c.name, c.fromPeer, err, c.err)
			continue
		}
		if ok != (c.peer != "") || p.Name != c.peer || id != c.id {
			t.Errorf("Route(%q, fromPeer %v) = %q %q %v, want %q %q", c.name, c.fromPeer, p.Name, id, ok, c.peer, c.id)
		}
	}
}

func TestListed(t *testing.T) {
	s := tableSet(Info{Spec: Spec{Name: "b"}, State: StateUp, Models: []Model{{ID: "shared"}, {ID: "mine", Status: "loaded"}}},
		Info{Spec: Spec{Name: "a"}, State: StateDown, Models: []Model{{ID: "shared"}}})
	taken := map[string]bool{"mine": true}
	var got []string
	for _, m := range s.Listed(taken, 7) {
		got = append(got, m.ID+" "+m.OwnedBy+" "+m.Status.Value+" "+strings.Join(m.Aliases, ","))
		if m.Created != 7 {
			t.Errorf("%s created %d, want 7", m.ID, m.Created)
		}
	}
	// b answers, so it has "shared" under its own ID and a (down) under its ref; "mine" is local.
	want := []string{"shared peer:b available peer:b/shared", "peer:b/mine peer:b loaded ", "peer:a/shared peer:a unavailable "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Listed:\n got %q\nwant %q", got, want)
	}
	if !taken["shared"] || !taken["peer:a/shared"] {
		t.Errorf("taken after Listed: %v", taken)
	}
	if (*Set)(nil).Listed(taken, 0) != nil || len((*Set)(nil).Wires(nil)) != 0 {
		t.Error("a nil Set lists something")
	}
}

func TestBodyAndCheckLoop(t *testing.T) {
	out := Body([]byte(`{"model":"peer:a/m","llamatray_via":["x/y"],"n":1}`), "m", Marker("me", "a"))
	var got struct {
		Model string   `json:"model"`
		Via   []string `json:"llamatray_via"`
		N     int      `json:"n"`
	}
	if err := json.Unmarshal(out, &got); err != nil || got.Model != "m" || strings.Join(got.Via, ",") != "x/y,me/a" || got.N != 1 {
		t.Fatalf("Body = %s (%v)", out, err)
	}
	if b := Body([]byte(`{"prompt":"hi"}`), "m", "me/a"); strings.Contains(string(b), `"model"`) {
		t.Errorf("a body naming no model got one: %s", b)
	}
	if b := Body([]byte(`not json`), "m", "me/a"); string(b) != "not json" {
		t.Errorf("a body that is not JSON changed: %s", b)
	}

	s := tableSet(Info{Spec: Spec{Name: "a", URL: "http://a.example"}})
	if err := s.CheckLoop("me", http.Header{}, out); !errors.Is(err, ErrLoop) || !strings.Contains(err.Error(), "peer a (http://a.example)") {
		t.Errorf("CheckLoop of a body that came back: %v", err)
	}
	h := http.Header{ViaHeader: {"other/x, me/a"}}
	if err := (*Set)(nil).CheckLoop("me", h, nil); !errors.Is(err, ErrLoop) {
		t.Errorf("CheckLoop of a header that came back: %v", err)
	}
	if err := s.CheckLoop("you", h, out); err != nil {
		t.Errorf("CheckLoop of another instance's request: %v", err)
	}
}
