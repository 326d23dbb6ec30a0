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
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/llamatray/llamatray/router/envconfig"
	"github.com/llamatray/llamatray/router/releases"
	"github.com/llamatray/llamatray/router/wire"
)

// DefaultURL is Llamatray's releases collection in GitHub's REST API.
const DefaultURL = "https://api.github.com/repos/llamatray/llamatray/releases"

// URLEnv names the environment variable that replaces DefaultURL (envconfig.UpdateURL).
const URLEnv = string(envconfig.UpdateURL)

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

// Release is one published release of Llamatray.
type Release struct {
	Tag         string  // the Git tag, "v0.3.0"
	Version     Version // the tag read as a version
	Name        string  // the release's title
	URL         string  // its page, where the installers are: only a safe link (releases.Client.Link)
	Prerelease  bool    // GitHub marks it so, or its tag has a pre-release part
	PublishedAt time.Time
}

// Checker reads the releases list through the one GitHub client. Its zero value reads URL() with
// the default bounds (DefaultTimeout, DefaultMaxBody).
type Checker struct {
	releases.Client
}

// URL returns $LLAMATRAY_UPDATE_URL, else DefaultURL.
func URL() string { return envconfig.UpdateURL.URL(DefaultURL) }

// Releases lists the published releases whose tags are versions, drafts left out, in the list's
// order (GitHub's: newest first).
func (c *Checker) Releases(ctx context.Context) ([]Release, error) {
	gh := c.Client
	gh.Base = cmp.Or(gh.Base, URL())
	gh.Timeout = cmp.Or(gh.Timeout, DefaultTimeout)
	gh.MaxBody = cmp.Or(gh.MaxBody, DefaultMaxBody)
	gh.What = "Llamatray releases"
	list, err := gh.List(ctx, perPage)
	if err != nil {
		return nil, err
	}
	out := make([]Release, 0, len(list))
	for _, r := range list {
		v, err := ParseVersion(r.TagName)
		if err != nil {
			continue
		}
		out = append(out, Release{Tag: r.TagName, Version: v, Name: r.Name, URL: gh.Link(r),
			Prerelease: r.Prerelease || v.Prerelease(), PublishedAt: r.PublishedAt})
	}
	return out, nil
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
	cur = cmp.Or(cur, "dev")
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
	w.Current = cmp.Or(w.Current, "dev")
	if r.Latest != nil {
		w.Latest, w.URL = r.Latest.Version.String(), r.Latest.URL
	}
	return w
}
