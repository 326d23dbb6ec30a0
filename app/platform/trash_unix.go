//go:build unix

package platform

import (
	"path/filepath"
	"syscall"
)

// mountRoot returns the top directory of the file system holding path.
func mountRoot(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(abs, &st); err != nil {
		return "", err
	}
	dir := filepath.Dir(abs)
	for {
		parent := filepath.Dir(dir)
		var pst syscall.Stat_t
		if parent == dir || syscall.Stat(parent, &pst) != nil || pst.Dev != st.Dev {
			return dir, nil
		}
		dir = parent
	}
}
