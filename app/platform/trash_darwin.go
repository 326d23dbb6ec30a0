//go:build darwin

package platform

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// MoveToTrash moves a file to ~/.Trash, or, for a file on another volume, to that volume's
// .Trashes/UID, so a large model is never copied.
func MoveToTrash(path string) error {
	home, err := os.UserHomeDir()
	if err != nil {
		return fmt.Errorf("move %s to the trash: %w", path, err)
	}
	_, err = moveIntoDir(filepath.Join(home, ".Trash"), path)
	if err == nil {
		return nil
	}
	if !errors.Is(err, syscall.EXDEV) {
		return fmt.Errorf("move %s to the trash: %w", path, err)
	}
	top, terr := mountRoot(path)
	if terr != nil {
		return fmt.Errorf("move %s to the trash: %w", path, err)
	}
	if _, err := moveIntoDir(filepath.Join(top, ".Trashes", fmt.Sprint(os.Getuid())), path); err != nil {
		return fmt.Errorf("move %s to the trash: %w", path, err)
	}
	return nil
}
