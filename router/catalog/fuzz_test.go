package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
)

// fuzzPad is how far FuzzParse extends each input with (sparse) zeros, standing in for tensor
// data so that small inputs can describe whole models.
const fuzzPad = 8 << 20

// headerOnly cuts a fixture's bytes to its header.
func headerOnly(t testing.TB, b []byte) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "h.gguf")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	fh, err := readFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b[:fh.end]
}

// FuzzParse reads arbitrary bytes, followed by zeros, as a GGUF model file through the
// catalog's header path: the bounded reader, the assembly into gguf-parser-go's view, the
// metadata and the estimate. It must not panic, must not need gguf-parser-go's panics to be
// recovered (the bounded reader should have refused such a file), and must allocate little.
func FuzzParse(f *testing.F) {
	for _, cc := range corruptCases(f) {
		f.Add(cc.data[:min(len(cc.data), 16<<10)])
	}
	f.Add(headerOnly(f, fixtureBytes(f, ggufwrite.HeaderOptions{FileType: 15})))
	f.Add(headerOnly(f, fixtureBytes(f, ggufwrite.HeaderOptions{Blocks: 3, SplitNo: 0, SplitCount: 2})))
	proj := filepath.Join(f.TempDir(), "mmproj.gguf")
	writeProjector(f, proj, 64)
	if b, err := os.ReadFile(proj); err == nil {
		f.Add(headerOnly(f, b))
	}

	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "model.gguf")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, int64(len(data))+fuzzPad); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := readFile(path); err != nil {
			return // refused, without a panic
		}
		h, err := parseHeader(path, []string{path})
		var pe *panicError
		if errors.As(err, &pe) {
			t.Fatalf("gguf-parser-go panicked on a header the reader accepted: %v\n%s", pe.v, pe.stack)
		}
		if err == nil {
			for _, p := range []EstimateParams{{ContextSize: 4096}, {ContextSize: 0, GPULayers: -1, Parallel: 2, FlashAttn: "on"}} {
				if _, err := estimate(h, nil, p); errors.As(err, &pe) {
					t.Fatalf("estimate panicked: %v\n%s", pe.v, pe.stack)
				}
			}
		}
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20+16*uint64(len(data)) {
			t.Fatalf("reading a %d-byte file allocated %d MiB", len(data), grew>>20)
		}
	})
}
