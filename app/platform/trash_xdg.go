//go:build !windows && !darwin

package platform

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/adrg/xdg"
)

// MoveToTrash moves a file to the freedesktop.org trash: $XDG_DATA_HOME/Trash, or, for a file on
// another file system, that file system's $topdir/.Trash-$uid, so a large model is never copied.
func MoveToTrash(path string) error {
	_, err := TrashInto(filepath.Join(xdg.DataHome, "Trash"), path, time.Now())
	if err == nil || !errors.Is(err, syscall.EXDEV) {
		return err
	}
	top, terr := mountRoot(path)
	if terr != nil {
		return fmt.Errorf("%w (and finding its file system's trash: %v)", err, terr)
	}
	_, err = TrashInto(filepath.Join(top, fmt.Sprintf(".Trash-%d", os.Getuid())), path, time.Now())
	return err
}
