package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWriteDocKeepsAnalysis: a new run rewrites the generated part of docs/benchmarks.md and keeps
// the hand-written analysis at its end.
func TestWriteDocKeepsAnalysis(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	const analysis = "\n## Analysis\n\nWritten by hand.\n"
	if err := os.WriteFile(path, []byte("# Benchmarks\n\nold results\n"+analysis), 0o644); err != nil {
		t.Fatal(err)
	}
	r := report{specs: cellSpecs(), slices: 1, coldRuns: 1}
	if err := r.writeDoc(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if strings.Contains(doc, "old results") || !strings.Contains(doc, "## Results") {
		t.Fatalf("generated part not rewritten:\n%s", doc)
	}
	if !strings.HasSuffix(doc, analysis) || strings.Count(doc, "## Analysis") != 1 {
		t.Fatalf("analysis not kept once at the end:\n%s", doc)
	}
}

func TestPeersSectionReplacedInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	r := peerReport{duration: time.Second, slices: 1}
	body := r.markdown()
	for _, tc := range []struct{ before, want string }{
		{"# Benchmarks\n\n## Analysis\n\nkept\n", "# Benchmarks\n\n## Analysis\n\nkept\n\n" + body},
		{"# B\n\n## Peers\n\nold table\n\n## Simulated machines\n\nsim\n", "# B\n\n" + body + "\n## Simulated machines\n\nsim\n"},
		{"# B\n\n## Peers\n\nold table\n", "# B\n\n" + body + "\n"},
	} {
		if err := os.WriteFile(path, []byte(tc.before), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := r.writeDoc(path); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if string(got) != tc.want {
			t.Errorf("from %q:\ngot  %q\nwant %q", tc.before, got, tc.want)
		}
	}
}
