// Package atomicfile replaces a file's content all at once: readers see the old content or the
// new, never a part, and a failed write leaves the old file as it was and no temporary behind. It is
// the one way Llamatray writes its state and settings files (the configuration, footprints, pulls,
// builds, tokens, login items). Lock and TryLock take a lock file's lock, shared with other processes.
package atomicfile

import (
	"cmp"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data, with the mode perm: written to a temporary file in path's folder
// (which must exist), synced, then renamed over path. The temporary file has perm from its
// creation on, so a secret is never readable by others, even for a moment.
func Write(path string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(cmp.Or(dir, "."), "."+base+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	// CreateTemp makes it 0600; the mode asked for is set before anything is written.
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
