package service

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

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
	if p.Name == "" {
		p.Name = PeerName(p.URL)
	}
	if err := config.CheckPeerName(p.Name); err != nil {
		return err
	}
	if err := config.CheckPeerURL(p.URL); err != nil {
		return err
	}
	return s.Edit(func(c *config.Config) error {
		if c.Peers == nil {
			c.Peers = map[string]config.Peer{}
		}
		c.Peers[p.Name] = config.Peer{URL: strings.TrimRight(p.URL, "/"), APIKey: p.APIKey}
		return nil
	})
}

// RemovePeer takes peer name out of the configuration.
func (s *Service) RemovePeer(name string) error {
	return s.Edit(func(c *config.Config) error {
		if _, ok := c.Peers[name]; !ok {
			return fmt.Errorf("%w: %q", httpapi.ErrNoSuchPeer, name)
		}
		delete(c.Peers, name)
		if len(c.Peers) == 0 {
			c.Peers = nil
		}
		return nil
	})
}

// PeerName is a peer name made from u's host: its letters, digits, '.', '-' and '_' ("peer" when
// none is left), as `llamatray peer add` names a peer given no --name.
func PeerName(u string) string {
	host := u
	if p, err := url.Parse(u); err == nil && p.Hostname() != "" {
		host = p.Hostname()
		if port := p.Port(); port != "" {
			host += "-" + port
		}
	}
	var b strings.Builder
	for _, c := range host {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' {
			b.WriteRune(c)
		} else if b.Len() > 0 {
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), ".-_")
	if len(name) > config.MaxPeerName {
		name = name[:config.MaxPeerName]
	}
	if name == "" {
		return "peer"
	}
	return name
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
