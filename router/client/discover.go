package client

import (
	"context"
	"net/http"

	"github.com/llamatray/llamatray/router/wire"
)

// Discovered is what the instance found of other Llamatrays on the local network (not yet peers).
func (c *Client) Discovered(ctx context.Context) (wire.DiscoveredList, error) {
	var l wire.DiscoveredList
	err := c.do(ctx, http.MethodGet, "/api/peers/discovered", nil, &l)
	return l, err
}
