package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A simulated model's fake holds its whole weights and KV cache over all its layers (it splits them
// by what it offloads itself), not only the GPU part of the catalog's estimate.
func TestSimKnobs(t *testing.T) {
	k := simKnobs(40<<30, 98, 100*time.Millisecond, "/r")
	if k["sim_model_mib"] != int64(40<<10) || k["sim_layers"] != 98 || k["sim_kv_mib"] != 98*64 || k["load_time"] != "4s" || k["record"] != "/r" {
		t.Fatalf("knobs %v", k)
	}
}

func TestCountFits(t *testing.T) {
	rec := filepath.Join(t.TempDir(), "r.jsonl")
	os.WriteFile(rec, []byte(`{"event":"start"}
{"event":"fit","layers":12}
{"event":"ready"}
{"event":"ready"}
not json
`), 0o644)
	if fitted, loads := countFits(rec); fitted != 1 || loads != 2 {
		t.Fatalf("%d fitted of %d loads, want 1 of 2", fitted, loads)
	}
}
