package peer

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	o := Options{MinBackoff: time.Second, MaxBackoff: 8 * time.Second}
	for _, c := range []struct{ last, want time.Duration }{
		{0, time.Second}, {time.Second, 2 * time.Second}, {4 * time.Second, 8 * time.Second}, {8 * time.Second, 8 * time.Second},
	} {
		if got := Backoff(c.last, o); got != c.want {
			t.Errorf("Backoff(%v) = %v, want %v", c.last, got, c.want)
		}
	}
}

func TestParseRef(t *testing.T) {
	for _, c := range []struct {
		in, name, id string
		ok           bool
	}{
		{"peer:box/qwen", "box", "qwen", true},
		{"peer:box/org/repo:Q4_K_M", "box", "org/repo:Q4_K_M", true},
		{"org/repo:Q4_K_M", "", "", false},
		{"peer:/x", "", "", false},
		{"peer:box/", "", "", false},
		{"peer:box", "", "", false},
	} {
		name, id, ok := ParseRef(c.in)
		if name != c.name || id != c.id || ok != c.ok {
			t.Errorf("ParseRef(%q) = %q, %q, %v", c.in, name, id, ok)
		}
	}
	if Ref("box", "a/b:Q8_0") != "peer:box/a/b:Q8_0" {
		t.Error(Ref("box", "a/b:Q8_0"))
	}
}

// waitPeer waits until cond holds for peer name's Info, on Changed, at most 10 s.
func waitPeer(t *testing.T, s *Set, name string, what string, cond func(Info) bool) Info {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		ch := s.Changed()
		if i, ok := s.Peer(name); ok && cond(i) {
			return i
		}
		select {
		case <-ch:
		case <-deadline:
			i, _ := s.Peer(name)
			t.Fatalf("peer %s never %s: %+v", name, what, i)
		}
	}
}

func fastOptions() Options {
	return Options{Refresh: time.Hour, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, PollTimeout: 2 * time.Second}
}

func TestUpListsModelsWithKey(t *testing.T) {
	var auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"object":"list","data":[{"id":"a","owned_by":"llamatray","status":{"value":"loaded"}},{"id":"b","owned_by":"peer:other"},{"id":"","owned_by":"x"},{"id":"c"}]}`))
	}))
	defer srv.Close()
	s := New(fastOptions())
	defer s.Close()
	s.Sync([]Spec{{Name: "box", URL: srv.URL, APIKey: "k1"}})
	i := waitPeer(t, s, "box", "up", Info.Up)
	if len(i.Models) != 2 || i.Models[0] != (Model{ID: "a", Status: "loaded"}) || i.Models[1].ID != "c" || i.Kind != "openai" {
		t.Fatalf("models %+v kind %q", i.Models, i.Kind)
	}
	if got := auth.Load(); got != "Bearer k1" {
		t.Fatalf("Authorization %q", got)
	}
	if f, ok := s.Find("c"); !ok || f.Name != "box" {
		t.Fatalf("Find(c) = %+v %v", f, ok)
	}
	if _, ok := s.Find("b"); ok {
		t.Fatal("a peer's peer's model was taken in")
	}
}

func TestOllamaTagsFallback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/tags" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"models":[{"name":"llama3:latest","model":"llama3:latest"}]}`))
	}))
	defer srv.Close()
	s := New(fastOptions())
	defer s.Close()
	s.Sync([]Spec{{Name: "ol", URL: srv.URL}})
	i := waitPeer(t, s, "ol", "up", Info.Up)
	if len(i.Models) != 1 || i.Models[0].ID != "llama3:latest" || i.Kind != "ollama" {
		t.Fatalf("%+v", i)
	}
}

// TestDownThenUpThenDown: a peer down at start is retried with backoff, is listed once it comes up
// (no Sync again), and when it goes away its models stay, shown down, and Failed fires.
func TestDownThenUpThenDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := New(fastOptions())
	defer s.Close()
	s.Sync([]Spec{{Name: "late", URL: "http://" + addr}})
	i := waitPeer(t, s, "late", "down", func(i Info) bool { return i.State == StateDown })
	if i.Error == "" || len(i.Models) != 0 {
		t.Fatalf("%+v", i)
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"data":[{"id":"m"}]}`))
	}))
	srv.Listener = ln
	srv.Start()
	i = waitPeer(t, s, "late", "up", Info.Up)
	if len(i.Models) != 1 || i.Error != "" || i.LastSeen.IsZero() {
		t.Fatalf("%+v", i)
	}
	failed := s.Failed("late")
	srv.Close()
	s.Poke("late")
	select {
	case <-failed:
	case <-time.After(10 * time.Second):
		t.Fatal("Failed never fired")
	}
	i = waitPeer(t, s, "late", "down again", func(i Info) bool { return i.State == StateDown })
	if len(i.Models) != 1 {
		t.Fatalf("the models of a peer gone away were dropped: %+v", i)
	}
	s.Sync(nil)
	if _, ok := s.Peer("late"); ok {
		t.Fatal("removed peer still there")
	}
}

func TestBadAnswerIsDown(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer right" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"data":[]}`))
	}))
	defer srv.Close()
	s := New(fastOptions())
	defer s.Close()
	s.Sync([]Spec{{Name: "k", URL: srv.URL, APIKey: "wrong"}})
	i := waitPeer(t, s, "k", "down", func(i Info) bool { return i.State == StateDown })
	if i.Error == "" {
		t.Fatal("no error")
	}
	s.Sync([]Spec{{Name: "k", URL: srv.URL, APIKey: "right"}}) // a changed key restarts the peer
	waitPeer(t, s, "k", "up", Info.Up)
}

func TestEndpointKeepsPrefix(t *testing.T) {
	u, err := Endpoint("http://h:1/base/", "/v1/models")
	if err != nil || u != "http://h:1/base/v1/models" {
		t.Fatal(u, err)
	}
}

func TestBetter(t *testing.T) {
	up, down := Info{State: StateUp}, Info{State: StateDown}
	a, b := up, up
	a.Name, b.Name = "a", "b"
	for _, c := range []struct {
		x, y Info
		want bool
	}{
		{a, b, true}, {b, a, false}, {up, down, true}, {down, up, false},
	} {
		if got := better(c.x, c.y); got != c.want {
			t.Errorf("better(%+v, %+v) = %v", c.x, c.y, got)
		}
	}
}
