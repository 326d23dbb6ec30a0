package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ghreleases"
	"github.com/llamatray/llamatray/router/update"
	"github.com/llamatray/llamatray/router/wire"
)

// updateStandIn is Llamatray's releases: v0.3.0, v0.4.0 and the pre-release v0.5.0-rc.1.
func updateStandIn(t *testing.T) *ghreleases.Server {
	t.Helper()
	s := ghreleases.NewRepo(ghreleases.LlamatrayRepo)
	t.Cleanup(s.Close)
	for _, tag := range []string{"v0.3.0", "v0.4.0", "v0.5.0-rc.1"} {
		s.Add(tag, map[string][]byte{"llamatray_" + tag + "_linux_amd64.tar.gz": []byte(tag)})
	}
	s.SetFlags("v0.5.0-rc.1", false, true)
	return s
}

// runUpdateCLI runs `llamatray update ARGS` as version, with LLAMATRAY_UPDATE_URL set to base.
func runUpdateCLI(t *testing.T, version, base string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := Env{Stdout: &stdout, Stderr: &stderr, GOOS: "linux", Getenv: func(k string) string {
		if k == update.URLEnv {
			return base
		}
		return ""
	}}
	code := run(append([]string{"update"}, args...), Build{Version: version}, nil, env)
	return code, stdout.String(), stderr.String()
}

func TestUpdateCheck(t *testing.T) {
	isolate(t)
	s := updateStandIn(t)
	page := func(tag string) string {
		return strings.TrimSuffix(s.Base, "/repos/"+ghreleases.LlamatrayRepo+"/releases") + "/" + ghreleases.LlamatrayRepo + "/releases/tag/" + tag
	}
	for _, tc := range []struct {
		version string
		args    []string
		want    string
	}{
		{"0.3.0", nil, "Llamatray 0.4.0 is available: " + page("v0.4.0")},
		{"0.4.0", nil, "Llamatray 0.4.0 is the newest release"},
		{"0.4.0", []string{"--prerelease"}, "Llamatray 0.5.0-rc.1 is available: " + page("v0.5.0-rc.1")},
		{"dev", nil, "Llamatray dev is a development build, not compared with releases; the newest release is 0.4.0: " + page("v0.4.0")},
		{"0.4.0-SNAPSHOT-887b233", nil, "Llamatray 0.4.0-SNAPSHOT-887b233 is a snapshot build, not older than the newest release, 0.4.0: " + page("v0.4.0")},
	} {
		code, stdout, stderr := runUpdateCLI(t, tc.version, s.Base, append([]string{"--check"}, tc.args...)...)
		if code != 0 || strings.TrimSpace(stdout) != tc.want {
			t.Errorf("%s update --check %v: exit %d\nstdout %q\nstderr %q\nwant %q", tc.version, tc.args, code, stdout, stderr, tc.want)
		}
	}
	if ua := s.LastUserAgent(); ua != "Llamatray/0.4.0-SNAPSHOT-887b233" {
		t.Errorf("User-Agent %q", ua)
	}

	// update_prerelease in the configuration opts in as --prerelease does.
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte("update_prerelease = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := runUpdateCLI(t, "0.4.0", s.Base, "--check", "--config", cfg); code != 0 || !strings.Contains(stdout, "0.5.0-rc.1 is available") {
		t.Errorf("update_prerelease: exit %d %q", code, stdout)
	}

	code, stdout, _ := runUpdateCLI(t, "0.3.0", s.Base, "--check", "--json")
	var w wire.Update
	if err := json.Unmarshal([]byte(stdout), &w); code != 0 || err != nil {
		t.Fatalf("--json: exit %d %v %q", code, err, stdout)
	}
	if !w.Available || w.Latest != "0.4.0" || w.URL != page("v0.4.0") || w.Current != "0.3.0" || w.Build != "release" || w.CheckedAt.IsZero() {
		t.Errorf("--json: %+v", w)
	}
}

func TestUpdateCheckFailsAndUsage(t *testing.T) {
	isolate(t)
	s := updateStandIn(t)
	garbage := []byte("{not json")
	s.ListBody.Store(&garbage)
	code, stdout, stderr := runUpdateCLI(t, "0.3.0", s.Base, "--check")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "checking for a newer Llamatray: Llamatray releases: ") || !strings.Contains(stderr, "not a list of releases") {
		t.Errorf("garbage: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	s.ListBody.Store(nil)
	s.ListStatus.Store(403)
	if code, _, stderr := runUpdateCLI(t, "0.3.0", s.Base, "--check"); code != 1 || !strings.Contains(stderr, "HTTP 403: API rate limit exceeded") {
		t.Errorf("rate limit: exit %d %q", code, stderr)
	}
	if code, _, stderr := runUpdateCLI(t, "0.3.0", s.Base); code != 2 || !strings.Contains(stderr, "usage: llamatray update --check") {
		t.Errorf("no --check: exit %d %q", code, stderr)
	}
	if code, _, stderr := runUpdateCLI(t, "0.3.0", s.Base, "-h"); code != 0 || !strings.Contains(stderr, "Exit status: 0 when the check worked") {
		t.Errorf("-h: exit %d %q", code, stderr)
	}
}
