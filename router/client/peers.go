package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/llamatray/llamatray/router/wire"
)

// Peers lists the instance's peers: state, models, last error.
func (c *Client) Peers(ctx context.Context) ([]wire.Peer, error) {
	var l wire.PeerList
	if err := c.do(ctx, http.MethodGet, "/api/peers", nil, &l); err != nil {
		return nil, err
	}
	return l.Peers, nil
}

// AddPeer adds a peer to the instance (saved in its configuration), or changes the one of its name.
func (c *Client) AddPeer(ctx context.Context, p wire.PeerAdd) ([]wire.Peer, error) {
	var l wire.PeerList
	if err := c.do(ctx, http.MethodPost, "/api/peers", p, &l); err != nil {
		return nil, err
	}
	return l.Peers, nil
}

// RemovePeer takes a peer out of the instance's configuration.
func (c *Client) RemovePeer(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/peers/"+url.PathEscape(name), nil, nil)
}
