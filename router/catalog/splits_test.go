package catalog

import (
	"fmt"
	"runtime"
	"testing"
)

// A name may declare up to 99999 shards. Sets that declare many and hold few (a hostile Hub
// listing: each file the first shard of another model) cost what they hold, not what they declare,
// and the missing shards are named up to a few, then counted.
func TestSplitsDeclaredTotalsCostNothing(t *testing.T) {
	const sets = 500
	var files []string
	for i := range sets {
		files = append(files, fmt.Sprintf("m%d-00001-of-99999.gguf", i))
	}
	files = append(files, "x-00001-of-00004.gguf", "x-00003-of-00004.gguf")
	var whys []string
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := Splits(files, func(f string) (string, string) { return ".", f }, func(_ string, _, why string) { whys = append(whys, why) })
	runtime.ReadMemStats(&after)
	if len(got) != 0 || len(whys) != sets+1 {
		t.Fatalf("%d sets, %d refused; want 0 and %d", len(got), len(whys), sets+1)
	}
	if want := "split model is missing shard 2, 3, 4, 5, 6, 7, 8, 9, 99990 more of 99999"; whys[0] != want {
		t.Errorf("refused with %q, want %q", whys[0], want)
	}
	if want := "split model is missing shard 2, 4 of 4"; whys[sets] != want {
		t.Errorf("refused with %q, want %q", whys[sets], want)
	}
	// Sized by the totals, the same work allocates 800 kB a set: 400 MB here.
	if n := after.TotalAlloc - before.TotalAlloc; n > 20<<20 {
		t.Errorf("%d sets of one shard allocated %d MB", sets, n>>20)
	}
}
