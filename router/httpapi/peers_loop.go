package httpapi

// Loops and load through peers: every request this instance sends to a peer carries a marker,
// "INSTANCE/PEER" (INSTANCE random per Server), in X-Llamatray-Via and in the body's
// "llamatray_via" list, which forwarding proxies keep (a proxy may drop the header; it passes the
// body on). A request that comes back with this instance's marker is refused (508, naming the
// peer it was sent to), so a peer that leads back here, through any chain of proxies, ends the
// loop at its first turn. Requests in flight are bounded per peer and over all peers (503).

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// viaField is the body's list of markers of the instances a request went through.
const viaField = "llamatray_via"

// The bounds of requests in flight to peers (variables for the tests).
var (
	peerMaxInFlight    = 64  // to one peer
	peerMaxInFlightAll = 256 // to all peers together
)

// errPeerLoop: a request this instance sent to a peer came back: 508 peer_loop.
var errPeerLoop = errors.New("request loop")

// errPeerBusy: too many requests in flight to peers: 503 peer_busy.
var errPeerBusy = errors.New("too many requests in flight")

// newInstance is a random marker of one Server.
func newInstance() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// viaMarker is the marker of a request sent to peer name.
func (srv *Server) viaMarker(name string) string { return srv.instance + "/" + name }

// loopedThrough says which peer a request that this instance sent came back from (its marker in
// the header or the body), or "" when it is no request of this instance's.
func (srv *Server) loopedThrough(r *http.Request, body []byte) (string, bool) {
	marks := r.Header.Values(viaHeader)
	var obj map[string]json.RawMessage
	if bytes.Contains(body, []byte(srv.instance)) && json.Unmarshal(body, &obj) == nil {
		var list []string
		if json.Unmarshal(obj[viaField], &list) == nil {
			marks = append(marks, list...)
		}
	}
	for _, m := range marks {
		for _, m := range strings.Split(m, ",") {
			if inst, name, ok := strings.Cut(strings.TrimSpace(m), "/"); ok && inst == srv.instance {
				return name, true
			}
		}
	}
	return "", false
}

// checkLoop is errPeerLoop, naming the peer, for a request of this instance's that came back.
func (srv *Server) checkLoop(r *http.Request, body []byte) error {
	name, ok := srv.loopedThrough(r, body)
	if !ok {
		return nil
	}
	url := ""
	if srv.o.Peers != nil {
		if p, found := srv.o.Peers.Peer(name); found {
			url = " (" + p.URL + ")"
		}
	}
	srv.log.Warn("request loop: a request sent to a peer came back", "peer", name)
	return fmt.Errorf("%w: this request was sent by this instance to peer %s%s and came back to it: peer %s leads back here (a proxy in front of this instance?)", errPeerLoop, name, url, name)
}

// withVia is body with marker added to its "llamatray_via" list; a body that is not a JSON object
// is returned as it is.
func withVia(body []byte, marker string) []byte {
	var obj map[string]json.RawMessage
	if len(bytes.TrimSpace(body)) == 0 || json.Unmarshal(body, &obj) != nil {
		return body
	}
	var list []string
	_ = json.Unmarshal(obj[viaField], &list)
	v, _ := json.Marshal(append(list, marker))
	obj[viaField] = v
	out, err := json.Marshal(obj)
	if err != nil {
		return body
	}
	return out
}

// peerFlight counts the requests in flight to peers.
type peerFlight struct {
	mu  sync.Mutex     // guards n and all
	n   map[string]int // per peer
	all int
}

// acquire counts one more request to peer name, or says which bound it is past.
func (f *peerFlight) acquire(name string) (release func(), err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]int{}
	}
	switch {
	case f.n[name] >= peerMaxInFlight:
		return nil, fmt.Errorf("%w to peer %s (at most %d)", errPeerBusy, name, peerMaxInFlight)
	case f.all >= peerMaxInFlightAll:
		return nil, fmt.Errorf("%w to peers (at most %d together)", errPeerBusy, peerMaxInFlightAll)
	}
	f.n[name]++
	f.all++
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.n[name]--; f.n[name] <= 0 {
				delete(f.n, name)
			}
			f.all--
		})
	}, nil
}
