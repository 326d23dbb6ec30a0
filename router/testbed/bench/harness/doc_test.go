package harness

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReplaceSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	const sec = "## Peers\n\nnew table\n"
	for _, tc := range []struct{ before, want string }{
		{"", sec},
		{"# Benchmarks\n\n## Analysis\n\nkept\n", "# Benchmarks\n\n## Analysis\n\nkept\n\n" + sec},
		{"# B\n\n## Peers\n\nold table\n\n## Simulated machines\n\nsim\n", "# B\n\n" + sec + "\n## Simulated machines\n\nsim\n"},
		{"# B\n\n## Peers\n\nold table\n", "# B\n\n" + sec + "\n"},
		{"## Peers\n\nold\n", sec + "\n"},
		{"# B\n\n## Peers and more\n\nother\n", "# B\n\n## Peers and more\n\nother\n\n" + sec},
	} {
		if tc.before != "" {
			if err := os.WriteFile(path, []byte(tc.before), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			os.Remove(path)
		}
		if err := ReplaceSection(path, "## Peers", sec); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if string(got) != tc.want {
			t.Errorf("from %q:\ngot  %q\nwant %q", tc.before, got, tc.want)
		}
	}
}
