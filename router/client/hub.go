package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/llamatray/llamatray/router/wire"
	"net/http"
	"net/url"
	"strings"
)

// FileProgress mirrors one file of a pull.
type FileProgress struct {
	Path  string `json:"path"`
	Done  int64  `json:"done"`
	Total int64  `json:"total"`
}

// PullProgress mirrors a pull in POST /models answers and /models/events "download" lines.
type PullProgress struct {
	Model      string         `json:"model"`
	Status     string         `json:"status"` // downloading, downloaded, failed, cancelled
	BytesDone  int64          `json:"bytes_done"`
	BytesTotal int64          `json:"bytes_total"`
	Rate       float64        `json:"bytes_per_second"`
	ETASeconds float64        `json:"eta_seconds"`
	File       string         `json:"file"`
	Files      []FileProgress `json:"files"`
	Error      string         `json:"error"`
}

// PullAnswer mirrors the answer of POST /models.
type PullAnswer struct {
	Model    string        `json:"model"`  // ORG/REPO:QUANT
	ID       string        `json:"id"`     // the catalog ID, when already on disk
	Status   string        `json:"status"` // downloading, or downloaded when on disk
	Download *PullProgress `json:"download"`
}

// Pull starts downloading ORG/REPO[:QUANT] from the Hugging Face Hub.
func (c *Client) Pull(ctx context.Context, name string) (PullAnswer, error) {
	var a PullAnswer
	err := c.do(ctx, http.MethodPost, "/models", map[string]any{"model": name}, &a)
	return a, err
}

// RemoveAnswer mirrors the answer of DELETE /models.
type RemoveAnswer struct {
	ID      string   `json:"id"`
	Model   string   `json:"model"`
	Status  string   `json:"status"` // "cancelled" when a running pull was stopped
	Removed []string `json:"removed"`
}

// Remove deletes a model pulled from the Hub, or cancels its pull.
func (c *Client) Remove(ctx context.Context, name string) (RemoveAnswer, error) {
	var a RemoveAnswer
	err := c.do(ctx, http.MethodDelete, "/models", map[string]any{"model": name}, &a)
	return a, err
}

// Resolve asks whether a name is served, returning its catalog ID.
func (c *Client) Resolve(ctx context.Context, name string) (string, error) {
	var m wire.Model
	if err := c.do(ctx, http.MethodGet, "/v1/models/"+url.PathEscape(name), nil, &m); err != nil {
		return "", err
	}
	return m.ID, nil
}

// PullEvents follows /models/events and sends its "download" lines until ctx ends or the stream
// does; the channel is closed then.
func (c *Client) PullEvents(ctx context.Context) (<-chan PullProgress, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/models/events", nil)
	if err != nil {
		return nil, err
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return nil, fmt.Errorf("llamatray at %s: %w", c.Base, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, decodeError(resp.StatusCode, nil)
	}
	out := make(chan PullProgress, 64)
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
			var ev struct {
				Kind string `json:"kind"`
				PullProgress
			}
			if json.Unmarshal([]byte(line), &ev) != nil || ev.Kind != "download" {
				continue
			}
			select {
			case out <- ev.PullProgress:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
