package peer

// Loops and load through peers: every request this instance sends to a peer carries a marker,
// "INSTANCE/PEER" (INSTANCE random per HTTP server, NewInstance), in X-Llamatray-Via and in the body's
// "llamatray_via" list, which forwarding proxies keep (a proxy may drop the header; it passes the
// body on). A request that comes back with this instance's marker is refused (508, naming the
// peer it was sent to), so a peer that leads back here, through any chain of proxies, ends the
// loop at its first turn. Requests in flight are bounded per peer and over all peers (503).

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// ViaHeader marks a request this instance sends to a peer (with its marker); a request that carries
// it is served by local models only, so two instances that are each other's peers never pass a
// request round.
const ViaHeader = "X-Llamatray-Via"

// viaField is the body's list of markers of the instances a request went through.
const viaField = "llamatray_via"

// The bounds of requests in flight to peers, when a Flight gives none.
const (
	maxInFlight    = 64  // to one peer
	maxInFlightAll = 256 // to all peers together
)

// ErrLoop: a request this instance sent to a peer came back (508 peer_loop).
var ErrLoop = errors.New("request loop")

// ErrBusy: too many requests in flight to peers (503 peer_busy).
var ErrBusy = errors.New("too many requests in flight")

// NewInstance is a random marker of one HTTP server.
func NewInstance() string { return rand.Text() }

// Marker is the marker instance gives a request it sends to peer name.
func Marker(instance, name string) string { return instance + "/" + name }

// CheckLoop is ErrLoop, naming the peer (and its URL, when s has it), for a request that instance
// sent to a peer and that came back to it: its marker in the request's header h or its body.
func (s *Set) CheckLoop(instance string, h http.Header, body []byte) error {
	name, ok := loopedThrough(instance, h, body)
	if !ok {
		return nil
	}
	url := ""
	if s != nil {
		if p, found := s.Peer(name); found {
			url = " (" + p.URL + ")"
		}
	}
	return fmt.Errorf("%w: this request was sent by this instance to peer %s%s and came back to it: peer %s leads back here (a proxy in front of this instance?)", ErrLoop, name, url, name)
}

// loopedThrough says which peer a request that instance sent came back from.
func loopedThrough(instance string, h http.Header, body []byte) (string, bool) {
	marks := h.Values(ViaHeader)
	var obj map[string]json.RawMessage
	if bytes.Contains(body, []byte(instance)) && json.Unmarshal(body, &obj) == nil {
		var list []string
		if json.Unmarshal(obj[viaField], &list) == nil {
			marks = append(marks, list...)
		}
	}
	for _, m := range marks {
		for _, m := range strings.Split(m, ",") {
			if inst, name, ok := strings.Cut(strings.TrimSpace(m), "/"); ok && inst == instance {
				return name, true
			}
		}
	}
	return "", false
}

// Body is a request's body as it goes to a peer: its "model" (when it names one) set to the peer's
// ID id, and marker added to its "llamatray_via" list. A body that is not a JSON object goes as it is.
func Body(body []byte, id, marker string) []byte {
	var obj map[string]json.RawMessage
	if len(bytes.TrimSpace(body)) == 0 || json.Unmarshal(body, &obj) != nil {
		return body
	}
	if _, ok := obj["model"]; ok {
		obj["model"], _ = json.Marshal(id)
	}
	var list []string
	_ = json.Unmarshal(obj[viaField], &list)
	obj[viaField], _ = json.Marshal(append(list, marker))
	out, err := json.Marshal(obj)
	if err != nil {
		return body
	}
	return out
}

// Flight counts the requests in flight to peers. Its zero value is ready, with the default bounds.
type Flight struct {
	Max, MaxAll int // the bounds to one peer and to all together; 0: 64 and 256

	mu  sync.Mutex     // guards n and all
	n   map[string]int // per peer
	all int
}

// Acquire counts one more request to peer name, or says which bound it is past (ErrBusy).
func (f *Flight) Acquire(name string) (release func(), err error) {
	limit, limitAll := cmp.Or(f.Max, maxInFlight), cmp.Or(f.MaxAll, maxInFlightAll)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]int{}
	}
	switch {
	case f.n[name] >= limit:
		return nil, fmt.Errorf("%w to peer %s (at most %d)", ErrBusy, name, limit)
	case f.all >= limitAll:
		return nil, fmt.Errorf("%w to peers (at most %d together)", ErrBusy, limitAll)
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
