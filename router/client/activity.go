package client

import (
	"context"
	"net/http"

	"github.com/llamatray/llamatray/router/wire"
)

// Activity returns the instance's GET /api/activity document: per model, the last hour in buckets.
func (c *Client) Activity(ctx context.Context) (wire.Activity, error) {
	var a wire.Activity
	err := c.do(ctx, http.MethodGet, "/api/activity", nil, &a)
	return a, err
}
