package service

import (
	"fmt"
	"sort"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/httpapi"
	"github.com/llamatray/llamatray/router/peer"
	"github.com/llamatray/llamatray/router/wire"
)

// peerSpecs are the configuration's [peers.NAME] sections, by name.
func peerSpecs(cfg config.Config) []peer.Spec {
	out := make([]peer.Spec, 0, len(cfg.Peers))
	for name, p := range cfg.Peers {
		out = append(out, peer.Spec{Name: name, URL: p.URL, APIKey: p.APIKey})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// syncPeers makes the peers read those of the configuration in force.
func (s *Service) syncPeers() { s.peers.Sync(peerSpecs(s.config())) }

// PeersChanged is closed at the next change of any peer's state or models.
func (s *Service) PeersChanged() <-chan struct{} { return s.peers.Changed() }

// AddPeer adds peer p to the configuration, or changes the one of its name, and reads it at once.
// With no name, the name is made from the URL's host.
func (s *Service) AddPeer(p wire.PeerAdd) error {
	if p.Name != "" { // a name given is checked first, the URL then
		if err := config.CheckPeerName(p.Name); err != nil {
			return err
		}
	}
	name, u, err := config.PeerOf(p.Name, p.URL)
	if err != nil {
		return err
	}
	return s.Edit(func(c *config.Config) error {
		c.SetPeer(name, config.Peer{URL: u, APIKey: p.APIKey})
		return nil
	})
}

// RemovePeer takes peer name out of the configuration.
func (s *Service) RemovePeer(name string) error {
	return s.Edit(func(c *config.Config) error {
		if !c.RemovePeer(name) {
			return fmt.Errorf("%w: %q", httpapi.ErrNoSuchPeer, name)
		}
		return nil
	})
}

// PeerList is every peer as GET /api/peers gives it (no keys), for the app.
func (s *Service) PeerList() []wire.Peer {
	local := func(id string) bool { _, err := s.eng.Resolve(id); return err == nil }
	out := []wire.Peer{}
	for _, p := range s.peers.Peers() {
		out = append(out, p.Wire(local))
	}
	return out
}
