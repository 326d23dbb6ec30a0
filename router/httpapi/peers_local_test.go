package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/wire"
)

// TestPeerEditsLocalOnly: POST /api/peers and DELETE /api/peers/NAME are refused 403 to a client on
// another machine (it could make this instance call any address and read the answers), and taken
// from a loopback client or one that connected from this machine's own address.
func TestPeerEditsLocalOnly(t *testing.T) {
	var added, removed []string
	_, _, server := testRouter(t, "http://127.0.0.1:1", func(o *Options) {
		o.AddPeer = func(p wire.PeerAdd) error { added = append(added, p.URL); return nil }
		o.RemovePeer = func(name string) error { removed = append(removed, name); return nil }
	})
	do := func(method, path, body, remote string, local net.Addr) (int, string) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Host = "127.0.0.1:8080"
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = remote
		if local != nil {
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, local))
		}
		rec := httptest.NewRecorder()
		server.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	add := `{"name":"x","url":"http://169.254.169.254/"}`
	lan := &net.TCPAddr{IP: net.ParseIP("192.168.1.5"), Port: 8080}
	for _, remote := range []string{"192.0.2.7:5000", "192.168.1.9:5000", "[fe80::1%eth0]:5000"} {
		if code, b := do(http.MethodPost, "/api/peers", add, remote, lan); code != http.StatusForbidden || !strings.Contains(b, "peer_edit_forbidden") || !strings.Contains(b, "only from this machine") {
			t.Fatalf("add from %s: %d %s", remote, code, b)
		}
		if code, b := do(http.MethodDelete, "/api/peers/x", "", remote, lan); code != http.StatusForbidden || !strings.Contains(b, "peer_edit_forbidden") {
			t.Fatalf("remove from %s: %d %s", remote, code, b)
		}
	}
	if len(added)+len(removed) != 0 {
		t.Fatalf("changed from another machine: %v %v", added, removed)
	}
	for _, remote := range []string{"127.0.0.1:5000", "[::1]:5000", "[::ffff:127.0.0.1]:5000", "192.168.1.5:5000"} {
		if code, b := do(http.MethodPost, "/api/peers", add, remote, lan); code != 200 {
			t.Fatalf("add from %s: %d %s", remote, code, b)
		}
		if code, b := do(http.MethodDelete, "/api/peers/x", "", remote, lan); code != 200 {
			t.Fatalf("remove from %s: %d %s", remote, code, b)
		}
	}
	if len(added) != 4 || len(removed) != 4 {
		t.Fatalf("%v %v", added, removed)
	}
}
