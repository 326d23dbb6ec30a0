// Package client talks to a running Llamatray instance over its HTTP API: list, load and unload
// models, read the status, and tell whether an instance is listening at an address.
package client

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/wire"
)

// PingTimeout bounds Ping when the context has no earlier deadline.
const PingTimeout = 2 * time.Second

// ErrNotLlamatray says something answered at the address, but not a Llamatray instance
// (for example a bare llama-server).
var ErrNotLlamatray = errors.New("another server is listening there, not Llamatray")

// Client is an HTTP client of one Llamatray instance.
type Client struct {
	Base   string       // e.g. http://127.0.0.1:8080
	APIKey string       // sent as "Authorization: Bearer" when set
	HTTP   *http.Client // nil → a client without timeout (Load and Unload may wait long); use contexts
}

// New returns a client of the instance listening on listen ("127.0.0.1:8080", ":8080",
// "0.0.0.0:8080", "[::]:8080" or a full http(s) URL). Wildcard hosts are reached on loopback.
func New(listen string) *Client {
	if strings.HasPrefix(listen, "http://") || strings.HasPrefix(listen, "https://") {
		return &Client{Base: strings.TrimSuffix(listen, "/")}
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		host, port = listen, "8080"
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "127.0.0.1"
	}
	return &Client{Base: "http://" + net.JoinHostPort(host, port)}
}

// Error is an error response of the server.
type Error struct {
	Status  int
	Type    string
	Code    string
	Message string
}

// Error returns the server's message.
func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("llamatray: HTTP %d", e.Status)
	}
	return e.Message
}

// send sends one request with in (when not nil) as its JSON body, asking for accept, with the API
// key. The caller closes the answer's body.
func (c *Client) send(ctx context.Context, method, path string, in any, accept string) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err := cmp.Or(c.HTTP, http.DefaultClient).Do(req)
	if err != nil {
		return nil, fmt.Errorf("llamatray at %s: %w", c.Base, err)
	}
	return resp, nil
}

// do sends one request and decodes a 2xx JSON answer into out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.send(ctx, method, path, in, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("llamatray at %s: reading the answer: %w", c.Base, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return decodeError(resp.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("llamatray at %s: unexpected answer to %s %s: %w", c.Base, method, path, err)
	}
	return nil
}

// call sends one request (see do) and returns its decoded answer, the zero T on error.
func call[T any](ctx context.Context, c *Client, method, path string, in any) (out T, err error) {
	if err = c.do(ctx, method, path, in, &out); err != nil {
		return *new(T), err
	}
	return out, nil
}

// decodeError turns an error response into *Error, keeping the server's message.
func decodeError(status int, raw []byte) error {
	e := &Error{Status: status}
	var doc struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &doc) == nil && doc.Error.Message != "" {
		e.Message, e.Type = doc.Error.Message, doc.Error.Type
		if json.Unmarshal(doc.Error.Code, &e.Code) != nil {
			e.Code = strings.Trim(string(doc.Error.Code), `"`)
		}
		return e
	}
	e.Message = strings.TrimSpace(string(raw))
	if len(e.Message) > 500 {
		e.Message = e.Message[:500]
	}
	e.Message = cmp.Or(e.Message, http.StatusText(status))
	e.Message = fmt.Sprintf("HTTP %d: %s", status, e.Message)
	return e
}

// Models lists every model of the instance with its state.
func (c *Client) Models(ctx context.Context) ([]wire.Model, error) {
	list, err := call[wire.ModelList](ctx, c, http.MethodGet, "/models", nil)
	return list.Data, err
}

// Load loads a model (ID or alias) and waits until it is ready or failed.
func (c *Client) Load(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, "/models/load", wire.ManageRequest{Model: id}, nil)
}

// Unload stops a model: after its in-flight requests finish, or at once with force.
func (c *Client) Unload(ctx context.Context, id string, force bool) error {
	return c.do(ctx, http.MethodPost, "/models/unload", wire.ManageRequest{Model: id, Force: force}, nil)
}

// Pin pins or unpins a model: never evicted by memory pressure or idle timers. The instance saves
// the choice in its configuration file, so it holds after a restart.
func (c *Client) Pin(ctx context.Context, id string, pinned bool) error {
	return c.do(ctx, http.MethodPost, "/models/pin", wire.ManageRequest{Model: id, Pinned: &pinned}, nil)
}

// Status returns the instance's /api/status document.
func (c *Client) Status(ctx context.Context) (wire.Status, error) {
	return call[wire.Status](ctx, c, http.MethodGet, "/api/status", nil)
}

// Ping reports whether a Llamatray instance answers at Base, within PingTimeout. It returns
// ErrNotLlamatray when another server answers there, and the connection error when nothing does.
func (c *Client) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, PingTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := cmp.Or(c.HTTP, http.DefaultClient).Do(req)
	if err != nil {
		return fmt.Errorf("llamatray at %s: %w", c.Base, err)
	}
	defer resp.Body.Close()
	var h wire.Health
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &h) != nil || h.Service != "llamatray" {
		return fmt.Errorf("%w (%s answered HTTP %d)", ErrNotLlamatray, c.Base, resp.StatusCode)
	}
	if h.Status != "ok" {
		return fmt.Errorf("llamatray at %s reports status %q", c.Base, h.Status)
	}
	return nil
}

// Peers lists the instance's peers: state, models, last error.
func (c *Client) Peers(ctx context.Context) ([]wire.Peer, error) {
	l, err := call[wire.PeerList](ctx, c, http.MethodGet, "/api/peers", nil)
	return l.Peers, err
}

// AddPeer adds a peer to the instance (saved in its configuration), or changes the one of its name.
func (c *Client) AddPeer(ctx context.Context, p wire.PeerAdd) ([]wire.Peer, error) {
	l, err := call[wire.PeerList](ctx, c, http.MethodPost, "/api/peers", p)
	return l.Peers, err
}

// RemovePeer takes a peer out of the instance's configuration.
func (c *Client) RemovePeer(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/peers/"+url.PathEscape(name), nil, nil)
}

// Discovered is what the instance found of other Llamatrays on the local network (not yet peers).
func (c *Client) Discovered(ctx context.Context) (wire.DiscoveredList, error) {
	return call[wire.DiscoveredList](ctx, c, http.MethodGet, "/api/peers/discovered", nil)
}

// Pull starts downloading ORG/REPO[:QUANT] from the Hugging Face Hub, with hfToken the Hub token the
// instance uses for this pull only ("" = its own).
func (c *Client) Pull(ctx context.Context, name, hfToken string) (wire.PullAnswer, error) {
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
		readEvents(resp.Body, func(_ string, data []byte) bool {
			var ev wire.DownloadEvent
			if json.Unmarshal(data, &ev) != nil || ev.Kind != "download" {
				return true
			}
			select {
			case out <- ev.Pull:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	return out, nil
}

// readEvents reads the server-sent events of body, calling each with an event's name (the last
// "event:" line's) and data, until each says stop or the stream ends (its error, nil at its end).
func readEvents(body io.Reader, each func(event string, data []byte) bool) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	event := ""
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			event = name
		} else if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && !each(event, []byte(data)) {
			return nil
		}
	}
	return sc.Err()
}

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
	var result error
	done := false
	err = readEvents(resp.Body, func(event string, data []byte) bool {
		switch event {
		case "progress":
			var p releases.Progress
			if json.Unmarshal(data, &p) == nil && progress != nil {
				progress(p)
			}
			return true
		case "done":
			if err := json.Unmarshal(data, &b); err != nil {
				result = fmt.Errorf("llamatray at %s: unexpected install result: %w", c.Base, err)
			}
		case "error":
			result = decodeError(http.StatusInternalServerError, data)
		default:
			return true
		}
		done = true
		return false
	})
	switch {
	case done:
		return b, result
	case err != nil:
		return b, fmt.Errorf("llamatray at %s: the install's progress stream broke: %w", c.Base, err)
	}
	return b, errors.New("llamatray: the install's progress stream ended without a result")
}
