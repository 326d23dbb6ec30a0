package peer

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRedirectNotFollowed: a peer whose list read redirects elsewhere (here another port: Go would
// keep the Authorization header there) is down with the redirect as its error, and its key never
// reaches the other service.
func TestRedirectNotFollowed(t *testing.T) {
	got := make(chan string, 4)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
		_, _ = w.Write([]byte(`{"data":[]}`))
	}))
	defer other.Close()
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/models", http.StatusFound)
	}))
	defer p.Close()
	s := New(Options{Refresh: time.Hour, MinBackoff: time.Hour})
	defer s.Close()
	s.Sync([]Spec{{Name: "box", URL: p.URL, APIKey: "secret-key"}})
	deadline := time.After(10 * time.Second)
	for {
		ch := s.Changed()
		if i, _ := s.Peer("box"); i.State != StateChecking {
			if i.State != StateDown || !strings.Contains(i.Error, "redirect") || !strings.Contains(i.Error, other.URL) {
				t.Fatalf("%+v", i)
			}
			break
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatal("the peer was never read")
		}
	}
	select {
	case a := <-got:
		t.Fatalf("the other service got a request (Authorization %q)", a)
	default:
	}
}
