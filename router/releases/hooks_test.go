package releases

import (
	"math"
	"time"
)

// The Installer's limits as the tests of hostile releases set them.

func setMaxUnpacked(in *Installer, n int64)   { in.MaxUnpacked = n }
func setStall(in *Installer, d time.Duration) { in.StallTimeout = d }
func setFree(in *Installer, free int64) {
	in.diskFree = func(string) (int64, bool) { return free, true }
}
func unpackWithin(file, name, dir string, max int64) error {
	return unpack(file, name, dir, limit{max: max, why: "the test's"})
}

// noLimit lets an archive unpack to anything (for tests of other refusals).
var noLimit = limit{max: math.MaxInt64 / 2, why: "no limit"}
