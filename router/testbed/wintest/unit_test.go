package wintest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed"
)

// unitPackages are the packages whose own tests run as Windows programs under Wine, with the
// reason for each test left out. Those that start llama-server processes (child, engine,
// httpapi) get the fake built for Windows.
var unitPackages = []struct {
	pkg  string
	skip map[string]string // test name → why it cannot run under Wine
}{
	{pkg: "router/config", skip: map[string]string{
		"TestSaveThroughSymlink": "Wine's CreateSymbolicLink reports success and makes no link"}},
	{pkg: "router/catalog", skip: map[string]string{
		"TestHuggingFaceCache":    "the Hub cache's snapshot links: Wine cannot make Windows symlinks and shows Linux ones as plain files",
		"TestHubNames":            "the Hub cache's snapshot links: Wine cannot make Windows symlinks and shows Linux ones as plain files",
		"TestHubNameIsTheID":      "the Hub cache's snapshot links: Wine cannot make Windows symlinks and shows Linux ones as plain files",
		"TestHubNameCollisions":   "the Hub cache's snapshot links: Wine cannot make Windows symlinks and shows Linux ones as plain files",
		"TestHubNameTakenByAFile": "the Hub cache's snapshot links: Wine cannot make Windows symlinks and shows Linux ones as plain files"}},
	{pkg: "router/hub", skip: map[string]string{
		"TestDownloadLayoutAndCatalog": "the Hub cache's snapshot links: Wine's CreateSymbolicLink reports success and makes no link",
		"TestRemove":                   "the Hub cache's snapshot links: Wine's CreateSymbolicLink reports success and makes no link"}},
	{pkg: "router/releases", skip: map[string]string{
		"TestInstallUpdateRollback": "the archive's library symlinks: Wine's CreateSymbolicLink reports success and makes no link"}},
	{pkg: "router/locate"},
	{pkg: "router/sched"},
	{pkg: "router/mem"},
	{pkg: "router/client"},
	{pkg: "router/child"},
	{pkg: "router/engine"},
	{pkg: "router/httpapi", skip: map[string]string{
		"TestPullEventsAndRemove": "the Hub cache's snapshot links: Wine's CreateSymbolicLink reports success and makes no link",
		"TestAutoPull":            "the Hub cache's snapshot links: Wine's CreateSymbolicLink reports success and makes no link"}},
	{pkg: "router/peer"},
	{pkg: "router/worker"},
	{pkg: "router/front"},
	{pkg: "router/internal/neterr"},
	{pkg: "app/platform"},
}

const module = "github.com/llamatray/llamatray"

// TestUnitTestsUnderWine cross-builds the tests of the packages that have Windows code paths
// (Job Objects and TerminateProcess in child, %LOCALAPPDATA% in config, the Run key in
// app/platform) or that the engine and HTTP layer build on, and runs them under Wine.
func TestUnitTestsUnderWine(t *testing.T) {
	w := needWine(t)
	dir := t.TempDir()
	fake := winPath(buildWindowsFake(t, filepath.Join(dir, "fake")))
	// A failure is reported where it happens and again at the end, so that the tail of a
	// long log still says why.
	var failures []string
	defer func() {
		for _, f := range failures {
			t.Errorf("%s", f)
		}
	}()
	for _, u := range unitPackages {
		n := len(failures)
		ok := t.Run(u.pkg, func(t *testing.T) {
			exe := filepath.Join(dir, strings.ReplaceAll(u.pkg, "/", "_")+".test.exe")
			src := buildWindowsTest(t, module+"/"+u.pkg, exe)
			args := []string{"-test.count=1", "-test.timeout=5m", "-test.v"}
			if len(u.skip) > 0 {
				var names []string
				for name, why := range u.skip {
					names = append(names, "^"+name+"$")
					t.Logf("left out: %s: %s", name, why)
				}
				args = append(args, "-test.skip", strings.Join(names, "|"))
			}
			start := time.Now()
			// go test runs a package's tests in its source folder (testdata).
			env := []string{testbed.FakeEnv + "=" + fake}
			r := w.runIn(t, 6*time.Minute, src, env, exe, args...)
			if !passed(r) && !ranATest(r) {
				// The program ended before any test began: Wine failed to start it, which
				// is not the package's failure. One more try says which it is.
				t.Logf("the tests of %s ended before any test ran; trying once more: %s", path.Base(u.pkg), r)
				r = w.runIn(t, 6*time.Minute, src, env, exe, args...)
			}
			if !passed(r) {
				// The end of the log is often a later test's passing output: the summary
				// carries the failed tests' own output, then the tail.
				failures = append(failures, fmt.Sprintf("the tests of %s under Wine:\n%s\nthe end of its output: %s",
					u.pkg, failedTests(r.stdout, 6000), tail(r.String(), 1500)))
				t.Fatalf("the tests of %s under Wine: %s", path.Base(u.pkg), tail(r.String(), 20000))
			}
			t.Logf("passed under Wine in %v", time.Since(start).Round(time.Millisecond))
		})
		if !ok && len(failures) == n {
			failures = append(failures, u.pkg+" failed; its message is above")
		}
	}
}

// passed reports whether a Go test binary's run ended well.
func passed(r result) bool {
	return r.code == 0 && (strings.Contains(r.stdout, "\nPASS") || strings.HasPrefix(r.stdout, "PASS"))
}

// ranATest reports whether a Go test binary run with -test.v got as far as starting a test.
func ranATest(r result) bool {
	return strings.Contains(r.stdout, "=== RUN")
}

// failedTests is the output of each failed test in a Go test binary's -test.v stdout, from its
// "=== RUN" line to its "--- FAIL" line (subtests included), at most n bytes in all.
func failedTests(stdout string, n int) string {
	lines := strings.Split(stdout, "\n")
	var b strings.Builder
	for i, l := range lines {
		name, ok := strings.CutPrefix(strings.TrimSpace(l), "--- FAIL: ")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, " ")
		if strings.Contains(name, "/") {
			continue // a subtest's output is in its parent's
		}
		start := i
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "=== RUN   "+name {
				start = j
				break
			}
		}
		b.WriteString(strings.Join(lines[start:i+1], "\n") + "\n")
	}
	if b.Len() == 0 {
		return "(no test reported FAIL)"
	}
	if s := b.String(); len(s) > n {
		return s[:n] + "…"
	}
	return b.String()
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// buildWindowsTest cross-builds the test binary of pkg for Windows and returns the package's
// source folder.
func buildWindowsTest(t *testing.T, pkg, out string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool(), "test", "-c", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -c %s for Windows: %v\n%s", pkg, err, b)
	}
	b, err := exec.CommandContext(ctx, goTool(), "list", "-f", "{{.Dir}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.TrimSpace(string(b))
}

func TestFailedTests(t *testing.T) {
	out := "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n    b_test.go:9: wrong\n--- FAIL: TestB (0.10s)\n" +
		"=== RUN   TestC\n--- PASS: TestC (0.00s)\n=== RUN   FuzzD\n--- PASS: FuzzD (1.2s)\nFAIL\n"
	got := failedTests(out, 1000)
	if want := "=== RUN   TestB\n    b_test.go:9: wrong\n--- FAIL: TestB (0.10s)\n"; got != want {
		t.Errorf("failedTests = %q, want %q", got, want)
	}
	if got := failedTests("PASS\n", 1000); got != "(no test reported FAIL)" {
		t.Errorf("failedTests of a pass = %q", got)
	}
}

func TestPassedAndRanATest(t *testing.T) {
	for _, tc := range []struct {
		r           result
		pass, begun bool
	}{
		{r: result{stdout: "=== RUN   TestA\n--- PASS: TestA (0.00s)\nPASS\n"}, pass: true, begun: true},
		{r: result{stdout: "PASS\n"}, pass: true},
		{r: result{stdout: "=== RUN   TestA\n--- FAIL: TestA (0.00s)\nFAIL\n", code: 1}, begun: true},
		{r: result{stdout: "=== RUN   TestA\nPASS\n", code: 2}, begun: true}, // exit code wins
		{r: result{stderr: "wine: could not load kernel32.dll", code: 1}},
		{r: result{}}, // no output at all: not a pass
	} {
		if got := passed(tc.r); got != tc.pass {
			t.Errorf("passed(%q) = %v", tc.r.stdout, got)
		}
		if got := ranATest(tc.r); got != tc.begun {
			t.Errorf("ranATest(%q) = %v", tc.r.stdout, got)
		}
	}
}
