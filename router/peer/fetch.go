package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/llamatray/llamatray/router/internal/safetext"
)

// Limits on what a peer's model list may hold: it is another machine's answer.
const (
	maxListBytes = 8 << 20
	maxModels    = 4096
	maxIDLen     = 512
)

// Model is one model a peer lists.
type Model struct {
	ID     string
	Status string // the peer's own state of it ("loaded", "unloaded", ...) when it says, else ""
}

// errNotFound is a list endpoint the peer does not have (404): Ollama before /v1/models.
var errNotFound = errors.New("no such endpoint")

// Endpoint joins base (a peer's URL, maybe with a path prefix) and path.
func Endpoint(base, path string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	return u.String(), nil
}

// fetchModels reads the peer's model list: /v1/models (OpenAI's shape, as Llamatray, llama-swap,
// llama.cpp and Ollama answer it), else, when that is 404, Ollama's /api/tags. kind says which
// answered: "openai" or "ollama".
func fetchModels(ctx context.Context, c *http.Client, s Spec) (models []Model, kind string, err error) {
	models, err = getList(ctx, c, s, "/v1/models", parseOpenAI)
	if err == nil {
		return models, "openai", nil
	}
	if !errors.Is(err, errNotFound) {
		return nil, "", err
	}
	models, err2 := getList(ctx, c, s, "/api/tags", parseOllama)
	if err2 != nil {
		return nil, "", fmt.Errorf("%w; /api/tags: %w", err, err2)
	}
	return models, "ollama", nil
}

func getList(ctx context.Context, c *http.Client, s Spec, path string, parse func([]byte) ([]Model, error)) ([]Model, error) {
	u, err := Endpoint(s.URL, path)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if s.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxListBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the answer: %w", path, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("GET %s: %w (404)", path, errNotFound)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("GET %s: %d: the peer refused the key (set api_key)", path, resp.StatusCode)
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, fmt.Errorf("GET %s: answered %d, a redirect to %q, which is not followed (the peer's key is sent to its URL only: set the URL it redirects to)", path, resp.StatusCode, resp.Header.Get("Location"))
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: answered %d", path, resp.StatusCode)
	case len(raw) > maxListBytes:
		return nil, fmt.Errorf("GET %s: the list is larger than %d MiB", path, maxListBytes>>20)
	}
	models, err := parse(raw)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return models, nil
}

// parseOpenAI reads {"data":[{"id","owned_by","status":{"value"}}]}. Models the peer has from its
// own peers are left out (one hop only).
func parseOpenAI(raw []byte) ([]Model, error) {
	var doc struct {
		Data []struct {
			ID      string          `json:"id"`
			OwnedBy string          `json:"owned_by"`
			Status  json.RawMessage `json:"status"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("not a model list: %w", err)
	}
	out := make([]Model, 0, len(doc.Data))
	for _, d := range doc.Data {
		if strings.HasPrefix(d.OwnedBy, "peer:") || !goodID(d.ID) {
			continue
		}
		out = append(out, Model{ID: d.ID, Status: statusValue(d.Status)})
		if len(out) == maxModels {
			break
		}
	}
	return out, nil
}

// statusValue is a model's state: llama.cpp's router and Llamatray give {"value": "loaded"}. One
// that breaks safetext's rule (an escape sequence for the terminal of `peer list`) is dropped.
func statusValue(raw json.RawMessage) string {
	var st struct {
		Value string `json:"value"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &st) != nil || len(st.Value) > 32 || safetext.Check(st.Value) != nil {
		return ""
	}
	return st.Value
}

// parseOllama reads Ollama's /api/tags: {"models":[{"name","model"}]}.
func parseOllama(raw []byte) ([]Model, error) {
	var doc struct {
		Models []struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		} `json:"models"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("not a model list: %w", err)
	}
	out := make([]Model, 0, len(doc.Models))
	for _, m := range doc.Models {
		id := m.Model
		if id == "" {
			id = m.Name
		}
		if goodID(id) {
			out = append(out, Model{ID: id})
		}
		if len(out) == maxModels {
			break
		}
	}
	return out, nil
}

// goodID takes an ID that can be listed and sent back: not too long, and no control or format
// character (safetext's rule: a U+202E could pass a peer's model off as a local one).
func goodID(id string) bool {
	return id != "" && len(id) <= maxIDLen && !strings.HasPrefix(id, RefPrefix) && safetext.Check(id) == nil
}
