package hub

import "context"

// Download is DownloadThen without a last check.
func (c *Client) Download(ctx context.Context, cache Cache, l *Listing, q Quant, progress func(Progress)) ([]string, error) {
	return c.DownloadThen(ctx, cache, l, q, progress, nil)
}
