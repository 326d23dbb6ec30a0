package proxy

import "testing"

// notForwarded is checked per key while the request's headers are copied: every hop-by-hop header
// RemoveHopByHop drops must be in it.
func TestNotForwardedHasEveryHopHeader(t *testing.T) {
	for _, k := range []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"} {
		if !isHopHeader(k) || !notForwarded(k) {
			t.Errorf("%s would be forwarded", k)
		}
	}
	for _, k := range []string{"Content-Type", "Accept", "User-Agent", "X-Request-Id"} {
		if notForwarded(k) {
			t.Errorf("%s would be dropped", k)
		}
	}
}
