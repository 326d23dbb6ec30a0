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

// TestPeerRatioIsRouterOverDirect: a router that serves 90 requests while direct llama-server serves
// 100 is at 0.900×.
func TestPeerRatioIsRouterOverDirect(t *testing.T) {
	cell := func(ok int) cellResult { return cellResult{ok: ok, elapsed: time.Second} }
	r := peerReport{direct8: cell(100), direct1: cell(10), peers: []peerResult{{name: "X", json8: cell(90), json1: cell(9)}}}
	if md := r.markdown(); !strings.Contains(md, "| X | 0.900× (90.0 req/s) |") {
		t.Fatalf("no 0.900× row for X in:\n%s", md)
	}
}
