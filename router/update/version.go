package update

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

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
		for _, id := range strings.Split(pre, ".") {
			if id == "" {
				return Version{}, fmt.Errorf("version %q: empty pre-release identifier", s)
			}
			v.Pre = append(v.Pre, id)
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

// Snapshot reports whether the version names a build made between releases rather than one:
// its pre-release part says SNAPSHOT, next or dev (GoReleaser's snapshots, "0.4.0-SNAPSHOT-887b233",
// "0.4.1-next"). Such a build is compared by its MAJOR.MINOR.PATCH only (see Newer).
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

// Compare orders versions as semver's precedence does: -1 when v is older than w, 0 when equal, 1
// when newer. A pre-release precedes its release (1.0.0-rc.1 < 1.0.0); identifiers compare one by
// one, numbers numerically and below words (rc.2 < rc.10 < rc.a), and a shorter list first when
// the rest is equal (rc < rc.1).
func (v Version) Compare(w Version) int {
	if c := cmp.Compare(v.Major, w.Major); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Minor, w.Minor); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Patch, w.Patch); c != 0 {
		return c
	}
	switch {
	case len(v.Pre) == 0 && len(w.Pre) == 0:
		return 0
	case len(v.Pre) == 0:
		return 1
	case len(w.Pre) == 0:
		return -1
	}
	for i := range min(len(v.Pre), len(w.Pre)) {
		if c := compareIdent(v.Pre[i], w.Pre[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(v.Pre), len(w.Pre))
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

// Newer reports whether release r is newer than the running version cur. A snapshot build (see
// Snapshot) is ahead of the release it was built after, or of the one it precedes, so only a release
// with a greater MAJOR.MINOR.PATCH is newer than it.
func Newer(r, cur Version) bool {
	if cur.Snapshot() {
		base := Version{Major: cur.Major, Minor: cur.Minor, Patch: cur.Patch}
		rb := Version{Major: r.Major, Minor: r.Minor, Patch: r.Patch}
		return rb.Compare(base) > 0
	}
	return r.Compare(cur) > 0
}
