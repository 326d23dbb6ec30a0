package app

import "github.com/llamatray/llamatray/router/wire"

// AddPeer adds a peer through the service's one configuration writer.
func (sb *serviceBackend) AddPeer(p wire.PeerAdd) error { return sb.svc.AddPeer(p) }

// RemovePeer takes a peer out through the service's one configuration writer.
func (sb *serviceBackend) RemovePeer(name string) error { return sb.svc.RemovePeer(name) }

// PeersChanged is closed at the next change of any peer.
func (sb *serviceBackend) PeersChanged() <-chan struct{} { return sb.svc.PeersChanged() }
