// Package update tells whether a newer Llamatray has been released. It reads Llamatray's own
// releases in the shape of GitHub's REST API ("List releases",
// https://docs.github.com/en/rest/releases/releases#list-releases) and compares versions; it
// downloads and installs nothing.
//
// The list is https://api.github.com/repos/llamatray/llamatray/releases; the environment variable
// LLAMATRAY_UPDATE_URL replaces it (tests, mirrors).
//
// What is offered: drafts never; a pre-release (GitHub's prerelease flag, or a tag with a
// pre-release part such as v0.4.0-rc.1) only when asked for (update_prerelease); tags that are not
// semantic versions are skipped. The newest of the rest by semver precedence is compared with the
// running version:
//
//   - a release build ("0.3.0", "v0.3.0-rc.1") is told of any newer release;
//   - a snapshot build ("0.4.0-SNAPSHOT-887b233", "0.4.1-next": made between releases) only of a
//     release with a greater MAJOR.MINOR.PATCH, since it may well contain the release of its own
//     number;
//   - a development build ("dev", or any version that is not semver) is never told that a release
//     is newer: it cannot know. The newest release is still reported, with the build named as what
//     it is.
package update

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/wire"
)

// DefaultURL is Llamatray's releases collection in GitHub's REST API.
const DefaultURL = "https://api.github.com/repos/llamatray/llamatray/releases"

// URLEnv names the environment variable that replaces DefaultURL.
const URLEnv = "LLAMATRAY_UPDATE_URL"

// The bounds of one check.
const (
	// DefaultMaxBody is the most the answer may hold (a page of 100 releases with their notes and
	// assets is well under 1 MiB).
	DefaultMaxBody = 4 << 20
	// DefaultTimeout bounds a check: connecting, the answer's headers and its body.
	DefaultTimeout = 30 * time.Second
	// perPage is how many of the newest releases are read (GitHub's most for one page).
	perPage = 100
)

// ErrTooLarge is matched by the error of an answer larger than the checker accepts.
var ErrTooLarge = errors.New("too large")

// Release is one published release of Llamatray.
type Release struct {
	Tag         string  // the Git tag, "v0.3.0"
	Version     Version // the tag read as a version
	Name        string  // the release's title
	URL         string  // its page (html_url), where the installers are
	Prerelease  bool    // GitHub marks it so, or its tag has a pre-release part
	PublishedAt time.Time
}

// ghRelease is the part of GitHub's release object read here.
type ghRelease struct {
	TagName     string    `json:"tag_name"`
	Name        string    `json:"name"`
	HTMLURL     string    `json:"html_url"`
	Draft       bool      `json:"draft"`
	Prerelease  bool      `json:"prerelease"`
	PublishedAt time.Time `json:"published_at"`
}

// Checker reads the releases list. Its zero value reads URL() with the default bounds.
type Checker struct {
	URL       string        // the releases collection; "" → URL()
	HTTP      *http.Client  // nil → http.DefaultClient (the check's own timeout applies either way)
	Timeout   time.Duration // bounds one check; 0 → DefaultTimeout
	MaxBody   int64         // the largest answer accepted; 0 → DefaultMaxBody
	UserAgent string        // "" → "Llamatray"
}

// URL returns $LLAMATRAY_UPDATE_URL, else DefaultURL.
func URL() string {
	if v := strings.TrimSpace(os.Getenv(URLEnv)); v != "" {
		return strings.TrimSuffix(v, "/")
	}
	return DefaultURL
}

// Releases lists the published releases whose tags are versions, drafts left out, in the list's
// order (GitHub's: newest first).
func (c *Checker) Releases(ctx context.Context) ([]Release, error) {
	u := c.URL
	if u == "" {
		u = URL()
	}
	u = strings.TrimSuffix(u, "/") + fmt.Sprintf("?per_page=%d", perPage)
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, err := c.get(ctx, u)
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("Llamatray releases: %s: no complete answer within %v: %w", u, timeout, ctx.Err())
		}
		return nil, err
	}
	var list []ghRelease
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("Llamatray releases: %s: not a list of releases: %w", u, err)
	}
	out := make([]Release, 0, len(list))
	for _, r := range list {
		v, err := ParseVersion(r.TagName)
		if r.Draft || err != nil {
			continue
		}
		out = append(out, Release{Tag: r.TagName, Version: v, Name: r.Name, URL: r.HTMLURL,
			Prerelease: r.Prerelease || v.Prerelease(), PublishedAt: r.PublishedAt})
	}
	return out, nil
}

func (c *Checker) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("Llamatray releases: %w", err)
	}
	// The media type and API version GitHub's REST docs ask clients to send; GitHub refuses
	// requests without a User-Agent.
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	ua := c.UserAgent
	if ua == "" {
		ua = "Llamatray"
	}
	req.Header.Set("User-Agent", ua)
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("Llamatray releases: %w", err)
	}
	defer resp.Body.Close()
	limit := c.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("Llamatray releases: reading %s: %w", u, err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("Llamatray releases: %s: the answer is %w: more than %s", u, ErrTooLarge, config.HumanSize(limit))
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
		return nil, fmt.Errorf("Llamatray releases: %s: HTTP %d: %s", u, resp.StatusCode, e.Message)
	}
	return body, nil
}

// Result is what a check found.
type Result struct {
	Current string   // the running version, as built ("dev", "0.3.0")
	Latest  *Release // the newest release offered, nil when none is published
	// Available is set when Latest is newer than Current: the one case in which Llamatray says
	// "Llamatray X is available".
	Available bool
	// Build is "release", "snapshot" or "development": what Current is (see the package comment).
	Build     string
	CheckedAt time.Time
}

// The kinds of build a Result names.
const (
	BuildRelease     = "release"
	BuildSnapshot    = "snapshot"
	BuildDevelopment = "development"
)

// Pick is the check's decision, a pure function: the newest release of rels offered (pre-releases
// only when prerelease is set) and whether it is newer than the running version cur.
func Pick(rels []Release, cur string, prerelease bool) Result {
	res := Result{Current: cur, Build: BuildDevelopment}
	cv, err := ParseVersion(cur)
	if err == nil {
		res.Build = BuildRelease
		if cv.Snapshot() {
			res.Build = BuildSnapshot
		}
	}
	for i := range rels {
		r := rels[i]
		if r.Prerelease && !prerelease {
			continue
		}
		if res.Latest == nil || r.Version.Compare(res.Latest.Version) > 0 {
			res.Latest = &r
		}
	}
	res.Available = res.Latest != nil && res.Build != BuildDevelopment && Newer(res.Latest.Version, cv)
	return res
}

// Check reads the releases and picks (see Pick), for the running version cur.
func (c *Checker) Check(ctx context.Context, cur string, prerelease bool) (Result, error) {
	rels, err := c.Releases(ctx)
	if err != nil {
		return Result{Current: cur}, err
	}
	res := Pick(rels, cur, prerelease)
	res.CheckedAt = time.Now().UTC()
	return res, nil
}

// Message is the result in one line: "Llamatray 0.4.0 is available: URL" when a newer release
// exists, else what the running build is beside the newest release.
func (r Result) Message() string {
	cur := r.Current
	if cur == "" {
		cur = "dev"
	}
	switch {
	case r.Available:
		return fmt.Sprintf("Llamatray %s is available: %s", r.Latest.Version, r.Latest.URL)
	case r.Latest == nil && r.Build == BuildDevelopment:
		return fmt.Sprintf("Llamatray %s is a development build; no release is published", cur)
	case r.Latest == nil:
		return fmt.Sprintf("No Llamatray release is published; this is %s", cur)
	case r.Build == BuildDevelopment:
		return fmt.Sprintf("Llamatray %s is a development build, not compared with releases; the newest release is %s: %s", cur, r.Latest.Version, r.Latest.URL)
	case r.Build == BuildSnapshot:
		return fmt.Sprintf("Llamatray %s is a snapshot build, not older than the newest release, %s: %s", cur, r.Latest.Version, r.Latest.URL)
	}
	cv, _ := ParseVersion(cur)
	if cv.Compare(r.Latest.Version) > 0 {
		return fmt.Sprintf("Llamatray %s is newer than the newest release, %s", cv, r.Latest.Version)
	}
	return fmt.Sprintf("Llamatray %s is the newest release", cv)
}

// Wire is the result as /api/status gives it (setup.update).
func (r Result) Wire() wire.Update {
	w := wire.Update{Current: r.Current, Build: r.Build, Available: r.Available, Message: r.Message(), CheckedAt: r.CheckedAt}
	if w.Current == "" {
		w.Current = "dev"
	}
	if r.Latest != nil {
		w.Latest, w.URL = r.Latest.Version.String(), r.Latest.URL
	}
	return w
}
