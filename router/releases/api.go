// Package releases installs llama.cpp's release builds of llama-server: it lists the releases that
// llama.cpp publishes on GitHub, picks the archive for this system (Pick, a pure function), downloads
// it with progress and checks its published sha256 digest, unpacks it into
// <data dir>/llama-server/<build>/ and switches to it, keeping the previous build for a rollback.
//
// The GitHub API base is https://api.github.com/repos/ggml-org/llama.cpp/releases; the environment
// variable LLAMATRAY_RELEASES_URL replaces it (tests, mirrors).
package releases

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// DefaultURL is llama.cpp's releases collection in GitHub's REST API.
const DefaultURL = "https://api.github.com/repos/ggml-org/llama.cpp/releases"

// URLEnv names the environment variable that replaces DefaultURL.
const URLEnv = "LLAMATRAY_RELEASES_URL"

// Latest asks for the newest release.
const Latest = "latest"

// Release is one entry of GitHub's "List releases" answer (also the answer of "Get the latest
// release" and "Get a release by tag name"), reduced to the fields used here. See
// https://docs.github.com/en/rest/releases/releases.
type Release struct {
	TagName     string    `json:"tag_name"` // llama.cpp's build, "b7100"
	Name        string    `json:"name"`
	Draft       bool      `json:"draft"`
	Prerelease  bool      `json:"prerelease"`
	PublishedAt time.Time `json:"published_at"`
	HTMLURL     string    `json:"html_url"`
	Assets      []Asset   `json:"assets"`
}

// Asset is one file of a release (https://docs.github.com/en/rest/releases/assets).
type Asset struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	// Digest is "sha256:<hex>", computed by GitHub at upload (published for assets since June 2025).
	Digest      string `json:"digest"`
	DownloadURL string `json:"browser_download_url"`
	ContentType string `json:"content_type"`
	State       string `json:"state"` // "uploaded" once complete
}

// SHA256 returns the hex sha256 of the asset's digest, "" when none is published.
func (a Asset) SHA256() string {
	h, ok := strings.CutPrefix(strings.ToLower(a.Digest), "sha256:")
	if !ok {
		return ""
	}
	return h
}

// Client reads llama.cpp's releases from GitHub's API (or a stand-in).
type Client struct {
	Base string       // the releases collection URL; "" → BaseURL()
	HTTP *http.Client // nil → a client with a 60 s timeout for API calls (downloads use their own)
}

// BaseURL returns $LLAMATRAY_RELEASES_URL, else DefaultURL.
func BaseURL() string {
	if v := strings.TrimSpace(os.Getenv(URLEnv)); v != "" {
		return strings.TrimSuffix(v, "/")
	}
	return DefaultURL
}

func (c *Client) base() string {
	if c.Base != "" {
		return strings.TrimSuffix(c.Base, "/")
	}
	return BaseURL()
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 60 * time.Second}
}

// ErrNoRelease is matched by the error of Get when the build does not exist.
var ErrNoRelease = errors.New("no such llama.cpp release")

// List returns up to n of the newest releases (drafts and prereleases left out), newest first.
func (c *Client) List(ctx context.Context, n int) ([]Release, error) {
	n = min(max(n, 1), 100) // per_page is at most 100
	var rels []Release
	if err := c.get(ctx, c.base()+"?per_page="+fmt.Sprint(n), &rels); err != nil {
		return nil, err
	}
	out := rels[:0]
	for _, r := range rels {
		if !r.Draft && !r.Prerelease {
			out = append(out, r)
		}
	}
	return out, nil
}

// Get returns one release: build is a tag such as "b7100", or Latest.
func (c *Client) Get(ctx context.Context, build string) (Release, error) {
	u := c.base() + "/latest"
	if build != "" && build != Latest {
		u = c.base() + "/tags/" + url.PathEscape(build)
	}
	var r Release
	if err := c.get(ctx, u, &r); err != nil {
		if errors.Is(err, errNotFound) {
			return r, fmt.Errorf("%w: %s", ErrNoRelease, build)
		}
		return r, err
	}
	if r.TagName == "" {
		return r, fmt.Errorf("%s: the answer names no tag_name", u)
	}
	return r, nil
}

var errNotFound = errors.New("404 Not Found")

func (c *Client) get(ctx context.Context, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("llama.cpp releases: %w", err)
	}
	// The media type and API version GitHub's REST docs ask clients to send.
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return fmt.Errorf("llama.cpp releases: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("llama.cpp releases: reading %s: %w", u, err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("llama.cpp releases: %s: %w", u, errNotFound)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &e)
		if e.Message == "" {
			e.Message = strings.TrimSpace(string(body))
		}
		return fmt.Errorf("llama.cpp releases: %s: HTTP %d: %s", u, resp.StatusCode, e.Message)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("llama.cpp releases: %s: %w", u, err)
	}
	return nil
}
