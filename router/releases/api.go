// Package releases installs llama.cpp's release builds of llama-server: it lists the releases that
// llama.cpp publishes on GitHub, picks the archive for this system (Pick, a pure function), downloads
// it with progress and checks its published sha256 digest, unpacks it into
// <data dir>/llama-server/<build>/ and switches to it, keeping the previous build for a rollback.
//
// Its Client is the product's one client of GitHub's releases API: router/update reads Llamatray's own
// releases through it. The llama.cpp base is https://api.github.com/repos/ggml-org/llama.cpp/releases;
// the environment variable LLAMATRAY_RELEASES_URL replaces it (tests, mirrors).
package releases

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/envconfig"
)

// DefaultURL is llama.cpp's releases collection in GitHub's REST API.
const DefaultURL = "https://api.github.com/repos/ggml-org/llama.cpp/releases"

// URLEnv names the environment variable that replaces DefaultURL (envconfig.ReleasesURL).
const URLEnv = string(envconfig.ReleasesURL)

// Latest asks for the newest release.
const Latest = "latest"

// Release is one release of GitHub's answers to "List releases", "Get the latest release" and "Get a
// release by tag name" (https://docs.github.com/en/rest/releases/releases), reduced to the fields used.
type Release struct {
	TagName    string  `json:"tag_name"` // llama.cpp's build, "b7100"
	Draft      bool    `json:"draft"`
	Prerelease bool    `json:"prerelease"`
	HTMLURL    string  `json:"html_url"`
	Assets     []Asset `json:"assets"`
}

// Asset is one file of a release (https://docs.github.com/en/rest/releases/assets).
type Asset struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	// Digest is "sha256:<hex>", computed by GitHub at upload (published for assets since June 2025).
	Digest      string `json:"digest"`
	DownloadURL string `json:"browser_download_url"`
}

// SHA256 returns the hex sha256 of the asset's digest, "" when none is published.
func (a Asset) SHA256() string {
	h, ok := strings.CutPrefix(strings.ToLower(a.Digest), "sha256:")
	if !ok {
		return ""
	}
	return h
}

// Client reads one repository's releases from GitHub's REST API (or a stand-in): llama.cpp's for
// the installer, Llamatray's own for router/update. It is the one GitHub client of the product.
type Client struct {
	Base      string        // the releases collection URL; "" → BaseURL()
	HTTP      *http.Client  // nil → http.DefaultClient (Timeout applies either way)
	Timeout   time.Duration // bounds one call: connecting, the answer's headers and its body; 0 → 60 s
	MaxBody   int64         // the largest answer accepted (ErrTooLarge past it); 0 → 32 MiB
	UserAgent string        // GitHub refuses requests without one; "" → "Llamatray"
	What      string        // names the feed in errors; "" → "llama.cpp releases"
}

// BaseURL returns $LLAMATRAY_RELEASES_URL, else DefaultURL.
func BaseURL() string { return envconfig.ReleasesURL.URL(DefaultURL) }

func (c *Client) base() string {
	if c.Base != "" {
		return strings.TrimSuffix(c.Base, "/")
	}
	return BaseURL()
}

func (c *Client) what() string { return cmp.Or(c.What, "llama.cpp releases") }

// ErrNoRelease is matched by the error of Get when the build does not exist.
var ErrNoRelease = errors.New("no such llama.cpp release")

// errNotFound is matched by the error of an answer 404.
var errNotFound = errors.New("not found")

// List returns up to n of the newest releases, drafts left out (prereleases kept), newest first.
func (c *Client) List(ctx context.Context, n int) ([]Release, error) {
	n = min(max(n, 1), 100) // per_page is at most 100
	var rels []Release
	if err := c.get(ctx, c.base()+"?per_page="+fmt.Sprint(n), "a list of releases", &rels); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(rels, func(r Release) bool { return r.Draft }), nil
}

// Get returns one release: build is a tag such as "b7100", or Latest.
func (c *Client) Get(ctx context.Context, build string) (Release, error) {
	u := c.base() + "/latest"
	if build != "" && build != Latest {
		u = c.base() + "/tags/" + url.PathEscape(build)
	}
	var r Release
	if err := c.get(ctx, u, "a release", &r); err != nil {
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

// Link is release r's page as it may be shown: its html_url when that is https:// on the feed's own
// web host (github.com for api.github.com), else the page built from the feed's URL and the tag;
// "" when neither can be had. A link to another host or of another scheme (javascript:, http:, a
// custom one) is never returned.
func (c *Client) Link(r Release) string {
	feed, err := url.Parse(c.base())
	if err != nil || (feed.Scheme != "https" && feed.Scheme != "http") || feed.Host == "" {
		return ""
	}
	host := feed.Host
	if host == "api.github.com" {
		host = "github.com"
	}
	if u, err := url.Parse(r.HTMLURL); err == nil && u.Scheme == "https" && u.Host == host && u.User == nil {
		return u.String()
	}
	repo, ok := strings.CutPrefix(feed.Path, "/repos/")
	repo, ok2 := strings.CutSuffix(repo, "/releases")
	if !ok || !ok2 || strings.Count(repo, "/") != 1 || r.TagName == "" {
		return ""
	}
	return (&url.URL{Scheme: feed.Scheme, Host: host, Path: "/" + repo + "/releases/tag/" + r.TagName}).String()
}

// get reads u's answer, which should be want (for errors), into out.
func (c *Client) get(ctx context.Context, u, want string, out any) error {
	timeout := cmp.Or(c.Timeout, 60*time.Second)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, err := c.fetch(ctx, u)
	if err != nil && !errors.Is(err, ErrTooLarge) && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: %s: no complete answer within %v: %w", c.what(), u, timeout, ctx.Err())
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s: %s: not %s: %w", c.what(), u, want, err)
	}
	return nil
}

// fetch reads u's answer: its body when the status is 200 OK, else an error.
func (c *Client) fetch(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.what(), err)
	}
	// The media type and API version GitHub's REST docs ask clients to send.
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("User-Agent", cmp.Or(c.UserAgent, "Llamatray"))
	resp, err := cmp.Or(c.HTTP, http.DefaultClient).Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.what(), err)
	}
	defer resp.Body.Close()
	limit := cmp.Or(c.MaxBody, 32<<20)
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: reading %s: %w", c.what(), u, err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%s: %s: the answer is %w: more than %s", c.what(), u, ErrTooLarge, config.HumanSize(limit))
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &e)
		if e.Message == "" {
			e.Message = strings.TrimSpace(string(body))
			if len(e.Message) > 200 {
				e.Message = e.Message[:200] + "…"
			}
		}
		err := fmt.Errorf("%s: %s: HTTP %d: %s", c.what(), u, resp.StatusCode, e.Message)
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("%w (%w)", err, errNotFound)
		}
		return nil, err
	}
	return body, nil
}
