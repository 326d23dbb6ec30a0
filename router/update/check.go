// Package update tells whether a newer Llamatray has been released: it reads Llamatray's own
// releases through the one GitHub client (releases.Client) from DefaultURL, or
// $LLAMATRAY_UPDATE_URL (tests, mirrors), and compares versions; it downloads and installs nothing.
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
	"slices"
	"strconv"
	"strings"
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
	Tag        string  // the Git tag, "v0.3.0"
	Version    Version // the tag read as a version
	URL        string  // its page, where the installers are: only a safe link (releases.Client.Link)
	Prerelease bool    // GitHub marks it so, or its tag has a pre-release part
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
		out = append(out, Release{Tag: r.TagName, Version: v, URL: gh.Link(r), Prerelease: r.Prerelease || v.Prerelease()})
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
	for _, r := range rels {
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

// Check reads the releases and picks (Pick) for the running version cur.
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
	cur := cmp.Or(r.Current, "dev")
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
	w := wire.Update{Current: cmp.Or(r.Current, "dev"), Build: r.Build, Available: r.Available, Message: r.Message(), CheckedAt: r.CheckedAt}
	if r.Latest != nil {
		w.Latest, w.URL = r.Latest.Version.String(), r.Latest.URL
	}
	return w
}

// Version is a semantic version (https://semver.org, 2.0.0): MAJOR.MINOR.PATCH, an optional
// pre-release ("-rc.1") and build metadata ("+abc", ignored in comparisons). A leading "v", as in
// Git tags ("v0.3.0"), is accepted; "1.2" reads as 1.2.0.
type Version struct {
	Major, Minor, Patch int
	Pre                 []string // pre-release identifiers, nil for a release
}

// ParseVersion reads a version such as "v1.2.3", "1.2.3-rc.1" or "0.4.0-SNAPSHOT-887b233+dirty".
func ParseVersion(s string) (Version, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	t, _, _ = strings.Cut(t, "+")
	core, pre, hasPre := strings.Cut(t, "-")
	parts := strings.Split(core, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("version %q: want MAJOR.MINOR.PATCH", s)
	}
	nums := [3]int{}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || strings.Trim(p, "0123456789") != "" || (len(p) > 1 && p[0] == '0') {
			return Version{}, fmt.Errorf("version %q: %q is not a number", s, p)
		}
		nums[i] = n
	}
	v := Version{Major: nums[0], Minor: nums[1], Patch: nums[2]}
	if hasPre {
		if v.Pre = strings.Split(pre, "."); slices.Contains(v.Pre, "") {
			return Version{}, fmt.Errorf("version %q: empty pre-release identifier", s)
		}
	}
	return v, nil
}

// String is the version without a "v": "1.2.3", "1.2.3-rc.1".
func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if len(v.Pre) > 0 {
		s += "-" + strings.Join(v.Pre, ".")
	}
	return s
}

// Prerelease reports whether the version has a pre-release part.
func (v Version) Prerelease() bool { return len(v.Pre) > 0 }

// Snapshot reports whether the version names a build made between releases (see the package
// comment): its pre-release part says SNAPSHOT, next or dev.
func (v Version) Snapshot() bool {
	for _, id := range v.Pre {
		for _, w := range strings.FieldsFunc(strings.ToLower(id), func(r rune) bool { return r == '-' || r == '_' }) {
			if w == "snapshot" || w == "next" || w == "dev" {
				return true
			}
		}
	}
	return false
}

// Compare orders versions by semver's precedence (semver.org §11): -1 when v is older than w, 0 when
// equal, 1 when newer; 1.0.0-rc < 1.0.0-rc.1 < 1.0.0-rc.2 < 1.0.0-rc.10 < 1.0.0-rc.a < 1.0.0.
func (v Version) Compare(w Version) int {
	if c := cmp.Or(cmp.Compare(v.Major, w.Major), cmp.Compare(v.Minor, w.Minor), cmp.Compare(v.Patch, w.Patch)); c != 0 {
		return c
	}
	if len(v.Pre) == 0 || len(w.Pre) == 0 {
		return cmp.Compare(len(w.Pre), len(v.Pre)) // a release follows its pre-releases
	}
	return slices.CompareFunc(v.Pre, w.Pre, compareIdent)
}

// compareIdent compares two pre-release identifiers: numbers numerically, below words, words in
// ASCII order.
func compareIdent(a, b string) int {
	na, ea := strconv.ParseUint(a, 10, 64)
	nb, eb := strconv.ParseUint(b, 10, 64)
	switch {
	case ea == nil && eb == nil:
		return cmp.Compare(na, nb)
	case ea == nil:
		return -1
	case eb == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// Newer reports whether release r is newer than the running version cur; than a snapshot build,
// only by a greater MAJOR.MINOR.PATCH (see the package comment).
func Newer(r, cur Version) bool {
	if cur.Snapshot() {
		r.Pre, cur.Pre = nil, nil
	}
	return r.Compare(cur) > 0
}
