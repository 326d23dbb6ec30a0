package releases

import (
	"fmt"
	"math"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/download"
)

// ErrTooLarge is matched when an answer of the API is larger than Client.MaxBody, a download is larger
// than its release lists, or an archive unpacks to
// more than an install accepts (see Installer.MaxUnpacked).
var ErrTooLarge = download.ErrTooLarge

// The limits of one install, the defaults of the Installer's fields.
const (
	// DefaultMaxUnpacked is the most one archive may unpack to, whatever the free space.
	DefaultMaxUnpacked = 8 << 30
	// DefaultUnpackRatio is how many times its own size an archive may unpack to, at least 64 MiB
	// (llama.cpp's unpack to about twice theirs; deflate packs a run of zeros about 1000 times).
	DefaultUnpackRatio = 200
)

const (
	// unpackFloor is the least the ratio allows: an archive of a few KiB may unpack to 64 MiB.
	unpackFloor = 64 << 20
	// diskMargin is the free space an unpack leaves on the store's file system.
	diskMargin = 256 << 20
	// entryCost is what each entry of an archive counts besides its bytes, about the least a file
	// takes on disk (a block): an archive of a million empty files, which would use up the disk's
	// inodes, counts as 4 GiB.
	entryCost = 4 << 10
)

// limit is the most one archive may unpack to, and what sets it.
type limit struct {
	max  int64
	disk bool   // the free disk space sets it: passing it is ErrDiskFull, not ErrTooLarge
	why  string // what sets it, for the error
}

// exceeded is the error of an archive that unpacks to size bytes (-1: more than the limit, found
// while unpacking), more than l allows.
func (l limit) exceeded(size int64) error {
	what := "more than " + config.HumanSize(l.max)
	if size >= 0 {
		what = config.HumanSize(size) + ", " + what
	}
	if l.disk {
		return fmt.Errorf("%w: the archive unpacks to %s (%s)", ErrDiskFull, what, l.why)
	}
	return fmt.Errorf("the archive is %w: it unpacks to %s (%s)", ErrTooLarge, what, l.why)
}

// unpackLimit is how much an archive of size bytes may unpack to: the least of the hard maximum,
// the ratio bound, and the store's free space less a margin.
func (in *Installer) unpackLimit(size int64) limit {
	hard := in.MaxUnpacked
	if hard <= 0 {
		hard = DefaultMaxUnpacked
	}
	l := limit{max: hard, why: "the most an archive may unpack to"}
	ratio := in.UnpackRatio
	if ratio <= 0 {
		ratio = DefaultUnpackRatio
	}
	if r := max(mulSat(size, ratio), unpackFloor); r < l.max {
		l = limit{max: r, why: fmt.Sprintf("%d times the archive's %s, at least %s", ratio, config.HumanSize(size), config.HumanSize(unpackFloor))}
	}
	if free, ok := in.freeSpace(); ok && free-diskMargin < l.max {
		l = limit{max: max(free-diskMargin, 0), disk: true,
			why: fmt.Sprintf("%s free in %s, less %s kept free", config.HumanSize(free), in.Store.Root, config.HumanSize(diskMargin))}
	}
	return l
}

// freeSpace is the free space of the store's file system, false when unknown.
func (in *Installer) freeSpace() (int64, bool) {
	if in.diskFree != nil {
		return in.diskFree(in.Store.Root)
	}
	return download.Free(in.Store.Root)
}

// mulSat is a×b for non-negative a and b, math.MaxInt64 when that overflows.
func mulSat(a, b int64) int64 {
	if a > 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}
