package peer

// Routing by peers: which peer's model a request's name reaches, and the peers and their models as
// this instance lists them. router/httpapi mounts them; router/ollama lists them in Ollama's shape.

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/llamatray/llamatray/router/wire"
)

// ErrHop is a "peer:NAME/ID" refused by Route: the request came from a peer (one hop only), or the
// ID is itself a ref. Both answer as a model not found.
var ErrHop = errors.New("one hop only")

// ErrNoPeer is a "peer:NAME/ID" whose NAME is no configured peer.
var ErrNoPeer = errors.New("no peer is named so")

// Route says whether a request for name goes to a peer, and to which of its models: "peer:NAME/ID"
// does; another name does when local says no local model takes it and a peer lists it. A request
// that came from a peer (fromPeer) never goes on to another, "peer:NAME/ID" included (ErrHop), so
// two instances that are each other's peers never pass one round. ok is false when the request
// stays here. A nil Set routes nothing.
func (s *Set) Route(name string, fromPeer bool, local func(name string) bool) (p Info, id string, ok bool, err error) {
	if s == nil {
		return p, "", false, nil
	}
	if pname, pid, explicit := ParseRef(name); explicit {
		switch {
		case fromPeer:
			return p, "", false, fmt.Errorf("model %q not found: %w: a request that came from a peer is served by this instance's own models only, never sent on to another peer", name, ErrHop)
		case strings.HasPrefix(pid, RefPrefix):
			return p, "", false, fmt.Errorf("model %q not found: %w: a peer's model ID never starts with %q", name, ErrHop, RefPrefix)
		}
		p, found := s.Peer(pname)
		if !found {
			return p, "", false, fmt.Errorf("%w: %q", ErrNoPeer, pname)
		}
		return p, pid, true, nil
	}
	if fromPeer {
		return p, "", false, nil
	}
	p, found := s.Find(name)
	if !found || local(name) { // a local model (or one being pulled) wins
		return Info{}, "", false, nil
	}
	return p, name, true, nil
}

// Listed are the peers' models for GET /models and /v1/models, created at created (Unix seconds):
// under their own ID, else — when a local model (taken) or an earlier peer has it (those that
// answer first, then by name, as Find picks) — under "peer:NAME/ID". taken gets every listed ID.
func (s *Set) Listed(taken map[string]bool, created int64) []wire.Model {
	if s == nil {
		return nil
	}
	var out []wire.Model
	peers := s.Peers()
	sort.SliceStable(peers, func(a, b int) bool { return peers[a].Up() && !peers[b].Up() }) // as Find picks
	for _, p := range peers {
		for _, m := range p.Models {
			ref := Ref(p.Name, m.ID)
			e := wire.Model{ID: m.ID, Object: "model", OwnedBy: OwnedBy(p.Name), Created: created,
				Aliases: []string{ref}, Tags: []string{}, Architecture: wire.Modalities{Input: []string{"text"}, Output: []string{"text"}}}
			if taken[m.ID] {
				e.ID, e.Aliases = ref, []string{}
			}
			taken[e.ID] = true
			e.Status.Value = p.ModelStatus(m)
			e.Status.Args = []string{}
			out = append(out, e)
		}
	}
	return out
}

// Wires is every peer as GET /api/peers and /api/status give them (see Info.Wire); empty for a nil Set.
func (s *Set) Wires(local func(id string) bool) []wire.Peer {
	out := []wire.Peer{}
	if s == nil {
		return out
	}
	for _, p := range s.Peers() {
		out = append(out, p.Wire(local))
	}
	return out
}

// Unavailable is the status of a model whose peer does not answer.
const Unavailable = "unavailable"

// ModelStatus is the state a listing shows of peer i's model m: "unavailable" while i is down,
// else the peer's own state of it, else "available".
func (i Info) ModelStatus(m Model) string {
	switch {
	case !i.Up():
		return Unavailable
	case m.Status != "":
		return m.Status
	}
	return "available"
}

// Wire is i as GET /api/peers gives it; local says a model of this instance has the ID. The key
// is never in it.
func (i Info) Wire(local func(id string) bool) wire.Peer {
	wp := wire.Peer{Name: i.Name, URL: i.URL, State: i.State, Kind: i.Kind, HasKey: i.APIKey != "", Error: i.Error,
		Models: make([]wire.PeerModel, 0, len(i.Models)), LastSeen: wire.Time(i.LastSeen), NextTry: wire.Time(i.NextTry)}
	for _, m := range i.Models {
		wp.Models = append(wp.Models, wire.PeerModel{ID: m.ID, Ref: Ref(i.Name, m.ID), Status: i.ModelStatus(m), Local: local != nil && local(m.ID)})
	}
	return wp
}
