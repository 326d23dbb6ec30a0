package service

// Discovery: other Llamatrays on the local network (router/discover). They are offered in GET
// /api/peers/discovered, `llamatray peer discover` and the app; one becomes a peer only when the
// user adds it (AddPeer). This instance is announced while advertise is on and it listens beyond
// loopback.

import (
	"context"
	"log/slog"
	"time"

	"github.com/llamatray/llamatray/router/discover"
	"github.com/llamatray/llamatray/router/wire"
)

// discovery is the Discoverer's goroutine: started by Start, ended by Stop.
type discovery struct {
	d    *discover.Discoverer
	done chan struct{} // closed when Run returns; nil until started
}

// newDiscovery is the service's Discoverer, reading the configuration in force before every look.
func newDiscovery(s *Service, log *slog.Logger) *discovery {
	if log == nil {
		log = slog.Default()
	}
	d := discover.New(discover.Options{
		Self: discover.Self{ID: discover.NewID(), Name: discover.HostName(), Version: s.o.Version},
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
		Log: log.With("part", "discover"),
	})
	return &discovery{d: d}
}

// start runs the Discoverer until ctx ends. Called once, from Start.
func (dc *discovery) start(ctx context.Context) {
	dc.done = make(chan struct{})
	go func() {
		defer close(dc.done)
		dc.d.Run(ctx)
	}()
}

// wait waits for the goroutine to end (its context ended): the announcement is withdrawn.
func (dc *discovery) wait() {
	if dc.done != nil {
		<-dc.done
	}
}

// poke makes it read the configuration and look again now.
func (dc *discovery) poke() { dc.d.Poke() }

// Discovered is every other Llamatray found on the local network that is not a configured peer;
// it asks for a fresh look when the last is older than 30 seconds (the app reads it every refresh).
func (s *Service) Discovered() []wire.Discovered {
	s.disc.d.RefreshOlder(30 * time.Second)
	found, _, _ := s.disc.d.Found()
	return found
}

// DiscoveredList is the GET /api/peers/discovered document; it also asks for a fresh look (at most
// one per discover.RefreshGap), whose answers a later call sees.
func (s *Service) DiscoveredList() wire.DiscoveredList {
	s.disc.d.Refresh()
	found, enabled, err := s.disc.d.Found()
	l := wire.DiscoveredList{Enabled: enabled, Discovered: found}
	if err != nil {
		l.Error = err.Error()
	}
	return l
}
