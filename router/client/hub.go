package client

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/llamatray/llamatray/router/wire"
)

// Pull starts downloading ORG/REPO[:QUANT] from the Hugging Face Hub.
func (c *Client) Pull(ctx context.Context, name string) (wire.PullAnswer, error) {
	return c.PullWithToken(ctx, name, "")
}

// PullWithToken is Pull with a Hub token the instance uses for this pull only ("" = its own).
func (c *Client) PullWithToken(ctx context.Context, name, hfToken string) (wire.PullAnswer, error) {
	body := map[string]any{"model": name}
	if hfToken != "" {
		body["hf_token"] = hfToken
	}
	return call[wire.PullAnswer](ctx, c, http.MethodPost, "/models", body)
}

// Remove deletes a model pulled from the Hub, or cancels its pull.
func (c *Client) Remove(ctx context.Context, name string) (wire.RemoveAnswer, error) {
	return call[wire.RemoveAnswer](ctx, c, http.MethodDelete, "/models", map[string]any{"model": name})
}

// Resolve asks whether a name is served, returning its catalog ID.
func (c *Client) Resolve(ctx context.Context, name string) (string, error) {
	m, err := call[wire.Model](ctx, c, http.MethodGet, "/v1/models/"+url.PathEscape(name), nil)
	return m.ID, err
}

// PullEvents follows /models/events and sends its "download" lines until ctx ends or the stream
// does; the channel is closed then.
func (c *Client) PullEvents(ctx context.Context) (<-chan wire.Pull, error) {
	resp, err := c.send(ctx, http.MethodGet, "/models/events", nil, "text/event-stream")
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, decodeError(resp.StatusCode, nil)
	}
	out := make(chan wire.Pull, 64)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev wire.DownloadEvent
			if json.Unmarshal([]byte(line), &ev) != nil || ev.Kind != "download" {
				continue
			}
			select {
			case out <- ev.Pull:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
