package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llamatray/llamatray/router/testbed/bench/harness"
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

// TestPeerSummaryShowsTheRoundsSpread: the summary gives each figure with the lowest and highest of
// its rounds, each round against direct's round of the same pass.
func TestPeerSummaryShowsTheRoundsSpread(t *testing.T) {
	slice := func(ok int, cpu, p50 time.Duration) cellResult {
		return cellResult{ok: ok, elapsed: time.Second, srvCPU: cpu * time.Duration(ok), lat: []time.Duration{p50}}
	}
	cell := func(slices ...cellResult) cellResult {
		var c cellResult
		for _, s := range slices {
			c.add(s)
		}
		return c
	}
	r := peerReport{slices: 2,
		direct8: cell(slice(100, 0, 0), slice(50, 0, 0)),
		direct1: cell(slice(10, 0, time.Millisecond), slice(10, 0, 2*time.Millisecond)),
		peers: []peerResult{{name: "X",
			json8: cell(slice(80, 100*time.Microsecond, 0), slice(50, 150*time.Microsecond, 0)),
			json1: cell(slice(9, 0, 1300*time.Microsecond), slice(9, 0, 2100*time.Microsecond))}}}
	md := r.markdown()
	for _, want := range []string{
		"| c=8 throughput × direct | 0.87 (0.80–1.00) |",
		"| c=1 p50 added | +0.30 ms (+0.10–+0.30) |",
		"| router CPU per request (c=8) | 119 µs (100–150) |",
		"the lowest and highest of the 2 rounds",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in:\n%s", want, md)
		}
	}
}

// TestDescribeJoinsWhatItHas: a failed answer is its status, error code and body, without the
// gaps of the parts it lacks.
func TestDescribeJoinsWhatItHas(t *testing.T) {
	for _, c := range []struct {
		r    harness.Result
		want string
	}{
		{harness.Result{Status: 502, Snippet: "502 Bad Gateway nginx"}, "Bad Gateway 502 Bad Gateway nginx"},
		{harness.Result{Status: 503, Code: "queue_timeout", Snippet: "{}"}, "Service Unavailable queue_timeout {}"},
		{harness.Result{Status: 500}, "Internal Server Error"},
	} {
		if got := describe(c.r); got != c.want {
			t.Errorf("describe = %q, want %q", got, c.want)
		}
	}
}
