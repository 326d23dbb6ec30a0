package download

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/llamatray/llamatray/router/config"
)

// ErrDiskFull is matched by the error of a download the disk cannot hold, found before it starts
// (CheckSpace) or while it writes (DiskFull).
var ErrDiskFull = errors.New("not enough free disk space")

// SpaceError says a download needs more than the disk has free; it matches ErrDiskFull.
type SpaceError struct {
	Dir        string
	Need, Free int64
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("not enough free disk space in %s: %s free, about %s needed", e.Dir, config.HumanSize(e.Free), config.HumanSize(e.Need))
}

func (e *SpaceError) Is(target error) bool { return target == ErrDiskFull }

// Free is the space the user may still write on the file system that holds dir, or would hold it
// (the nearest folder above it that exists); false when it cannot be told.
func Free(dir string) (int64, bool) {
	for { // the nearest folder that exists
		if _, err := os.Stat(dir); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	n, err := freeBytes(dir)
	if err != nil {
		return 0, false
	}
	return n, true
}

// CheckSpace refuses, with a *SpaceError, a download of need bytes into dir that the disk cannot
// hold. When the free space cannot be told it lets the writes say.
func CheckSpace(dir string, need int64) error {
	if free, ok := Free(dir); ok && need > free {
		return &SpaceError{Dir: dir, Need: need, Free: free}
	}
	return nil
}

// IsDiskFull reports whether err is the operating system saying the disk is full.
func IsDiskFull(err error) bool {
	var e syscall.Errno
	if !errors.As(err, &e) {
		return false
	}
	if runtime.GOOS == "windows" {
		return e == 39 || e == 112 // ERROR_HANDLE_DISK_FULL, ERROR_DISK_FULL
	}
	return e == syscall.ENOSPC || e == syscall.EDQUOT
}

// DiskFull wraps a write error so that a full disk reads as ErrDiskFull.
func DiskFull(err error, what string) error {
	if IsDiskFull(err) {
		return fmt.Errorf("%w: writing %s: %w", ErrDiskFull, what, err)
	}
	return fmt.Errorf("writing %s: %w", what, err)
}
