package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/llamatray/llamatray/router/releases"
)

// LlamaServers lists the installed llama-server builds; with available, also what installing build
// (a tag, or "latest") would pick here.
func (c *Client) LlamaServers(ctx context.Context, available bool, build string) (releases.Listing, error) {
	path := "/api/llama-server"
	if available {
		path += "?available=1&build=" + build
	}
	return call[releases.Listing](ctx, c, http.MethodGet, path, nil)
}

// UseLlamaServer switches the instance to an installed build ("previous" rolls back).
func (c *Client) UseLlamaServer(ctx context.Context, build string) (releases.Build, error) {
	return call[releases.Build](ctx, c, http.MethodPost, "/api/llama-server/use", releases.Request{Build: build})
}

// InstallLlamaServer asks the instance to install a build, calling progress for each progress event,
// and returns the installed build. Cancelling ctx cancels the install.
func (c *Client) InstallLlamaServer(ctx context.Context, req releases.Request, progress func(releases.Progress)) (releases.Build, error) {
	var b releases.Build
	resp, err := c.send(ctx, http.MethodPost, "/api/llama-server/install", req, "text/event-stream")
	if err != nil {
		return b, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return b, decodeError(resp.StatusCode, raw)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := []byte(strings.TrimPrefix(line, "data: "))
			switch event {
			case "progress":
				var p releases.Progress
				if json.Unmarshal(data, &p) == nil && progress != nil {
					progress(p)
				}
			case "done":
				if err := json.Unmarshal(data, &b); err != nil {
					return b, fmt.Errorf("llamatray at %s: unexpected install result: %w", c.Base, err)
				}
				return b, nil
			case "error":
				return b, decodeError(http.StatusInternalServerError, data)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return b, fmt.Errorf("llamatray at %s: the install's progress stream broke: %w", c.Base, err)
	}
	return b, errors.New("llamatray: the install's progress stream ended without a result")
}
