package atomicfile

import (
	"errors"
	"os"
)

// ErrBusy is matched by TryLock's error when another process holds the lock.
var ErrBusy = errors.New("locked by another process")

// Lock takes the exclusive lock of the lock file f, waiting for another process that holds it:
// the lock other processes (another Llamatray, its CLI, the Hub's clients) take on the same file.
// Closing f releases it.
func Lock(f *os.File) error { return lock(f, true) }

// TryLock is Lock without waiting: ErrBusy when another process holds the lock.
func TryLock(f *os.File) error { return lock(f, false) }
