package service

// Discovery: other Llamatrays on the local network (router/discover). They are offered in GET
// /api/peers/discovered, `llamatray peer discover` and the app; one becomes a peer only when the
// user adds it (AddPeer). This instance is announced while advertise is on and it listens beyond
// loopback.

import (
	"crypto/rand"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/discover"
	"github.com/llamatray/llamatray/router/wire"
)

// newDiscoverer is the service's Discoverer, reading the configuration in force before every look.
// Its goroutine (Run) is started by Start and waited for by Stop (discDone).
func (s *Service) newDiscoverer() *discover.Discoverer {
	return discover.New(discover.Options{
		Self: discover.Self{ID: strings.ToLower(rand.Text()), Name: discover.HostName(), Version: s.o.Version},
		Settings: func() discover.Settings {
			cfg := s.config()
			set := discover.Settings{Browse: cfg.Discover, Advertise: cfg.Advertise}
			if s.ListenErr() == nil {
				set.Listen = s.ListenAddr()
			}
			for _, p := range cfg.Peers {
				set.PeerURLs = append(set.PeerURLs, p.URL)
			}
			return set
		},
		Log: s.log.With("part", "discover"),
	})
}

// Discovered is every other Llamatray found on the local network that is not a configured peer;
// it asks for a fresh look when the last is older than 30 seconds (the app reads it every refresh).
func (s *Service) Discovered() []wire.Discovered {
	s.disc.Refresh(30 * time.Second)
	found, _, _ := s.disc.Found()
	return found
}

// DiscoveredList is the GET /api/peers/discovered document; it also asks for a fresh look (at most
// one per discover.RefreshGap), whose answers a later call sees.
func (s *Service) DiscoveredList() wire.DiscoveredList {
	s.disc.Refresh(discover.RefreshGap)
	found, enabled, err := s.disc.Found()
	l := wire.DiscoveredList{Enabled: enabled, Discovered: found}
	if err != nil {
		l.Error = err.Error()
	}
	return l
}
