package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// ErrBusy is matched by TryLock's error when another process holds the lock.
var ErrBusy = errors.New("locked by another process")

// Lock opens the lock file path (creating it and its folder) and waits for its exclusive lock, the
// one other processes (another Llamatray, its CLI) take on the same file. Closing the file releases it.
func Lock(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		if err = lock(f, true); err != nil {
			f.Close()
		}
	}
	return f, err
}

// TryLock takes the lock file f's exclusive lock without waiting: ErrBusy when another process
// holds it (the Hub's clients take the same lock on its blobs' lock files).
func TryLock(f *os.File) error { return lock(f, false) }
