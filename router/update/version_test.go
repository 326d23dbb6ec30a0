package update

import "testing"

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{in: "v1.2.3", want: "1.2.3"},
		{in: "1.2.3", want: "1.2.3"},
		{in: "0.4", want: "0.4.0"},
		{in: "v1.0.0-rc.1", want: "1.0.0-rc.1"},
		{in: "0.4.0-SNAPSHOT-887b233+dirty", want: "0.4.0-SNAPSHOT-887b233"},
		{in: "1.2.3+build.5", want: "1.2.3"},
		{in: "dev", bad: true},
		{in: "", bad: true},
		{in: "1", bad: true},
		{in: "1.2.3.4", bad: true},
		{in: "01.2.3", bad: true},
		{in: "1.+2.3", bad: true},
		{in: "1.2.3-", bad: true},
		{in: "1.2.3-rc..1", bad: true},
		{in: "b7100", bad: true},
		{in: "nightly", bad: true},
	} {
		v, err := ParseVersion(tc.in)
		switch {
		case tc.bad && err == nil:
			t.Errorf("ParseVersion(%q) = %v, want an error", tc.in, v)
		case !tc.bad && err != nil:
			t.Errorf("ParseVersion(%q): %v", tc.in, err)
		case !tc.bad && v.String() != tc.want:
			t.Errorf("ParseVersion(%q) = %s, want %s", tc.in, v, tc.want)
		}
	}
}

// The precedence example of semver.org §11, plus numbers beyond one digit and a "v".
func TestCompareOrder(t *testing.T) {
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "v1.0.0", "1.0.1", "1.2.0", "1.10.0", "2.0.0-rc.2", "2.0.0-rc.10", "v2.0.0"}
	for i := range order {
		for j := range order {
			a, b := mustParse(t, order[i]), mustParse(t, order[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", order[i], order[j], got, want)
			}
		}
	}
	if c := mustParse(t, "1.0.0+a").Compare(mustParse(t, "1.0.0+b")); c != 0 {
		t.Errorf("build metadata compared: %d", c)
	}
}

func TestNewer(t *testing.T) {
	for _, tc := range []struct {
		release, current string
		want             bool
	}{
		{"v0.4.0", "0.3.0", true},
		{"v0.3.0", "0.3.0", false},
		{"v0.3.0", "0.4.0", false},
		{"v0.4.0", "0.4.0-rc.1", true},
		{"v0.4.0-rc.2", "0.4.0-rc.1", true},
		// A snapshot is compared by its MAJOR.MINOR.PATCH: GoReleaser names it after the release
		// it follows ("0.4.0-SNAPSHOT-<commit>") or the one it precedes ("0.4.1-next").
		{"v0.4.0", "0.4.0-SNAPSHOT-887b233", false},
		{"v0.4.1", "0.4.1-next", false},
		{"v0.4.1", "0.4.0-SNAPSHOT-887b233", true},
		{"v0.5.0-rc.1", "0.4.0-snapshot", true},
		{"v0.3.9", "0.4.0-SNAPSHOT-887b233", false},
		// .goreleaser.yaml's snapshots: "{{ incpatch .Version }}-snapshot.<commit>".
		{"v0.1.1", "0.1.1-snapshot.6050798", false},
		{"v0.2.0", "0.1.1-snapshot.6050798", true},
	} {
		if got := Newer(mustParse(t, tc.release), mustParse(t, tc.current)); got != tc.want {
			t.Errorf("Newer(%s, %s) = %v, want %v", tc.release, tc.current, got, tc.want)
		}
	}
}

func mustParse(t *testing.T, s string) Version {
	t.Helper()
	v, err := ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
