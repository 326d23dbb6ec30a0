package platform

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// TrashInto moves path into a freedesktop.org trash directory (trashDir/files, with its
// trashDir/info/NAME.trashinfo record), as the Trash specification 1.0 describes. The info file is
// created first, exclusively, to claim the name; when the move fails it is removed again and the
// file stays where it was. It returns the path of the file in the trash.
func TrashInto(trashDir, path string, at time.Time) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("move %s to the trash: %w", path, err)
	}
	if _, err := os.Lstat(abs); err != nil {
		return "", fmt.Errorf("move %s to the trash: %w", path, err)
	}
	files, info := filepath.Join(trashDir, "files"), filepath.Join(trashDir, "info")
	for _, d := range []string{files, info} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", fmt.Errorf("move %s to the trash: %w", path, err)
		}
	}
	record := "[Trash Info]\nPath=" + trashInfoPath(abs) + "\nDeletionDate=" + at.Format("2006-01-02T15:04:05") + "\n"
	base := filepath.Base(abs)
	for n := 1; n < 10000; n++ {
		name := numberedName(base, n)
		infoPath := filepath.Join(info, name+".trashinfo")
		f, err := os.OpenFile(infoPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("move %s to the trash: %w", path, err)
		}
		_, werr := f.WriteString(record)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		dst := filepath.Join(files, name)
		if werr == nil {
			if _, err := os.Lstat(dst); err == nil {
				// a file without its record: leave it alone and try the next name
				os.Remove(infoPath)
				continue
			}
			werr = os.Rename(abs, dst)
		}
		if werr != nil {
			os.Remove(infoPath)
			return "", fmt.Errorf("move %s to the trash: %w", path, werr)
		}
		return dst, nil
	}
	return "", fmt.Errorf("move %s to the trash: no free name in %s", path, trashDir)
}

// trashInfoPath percent-encodes an absolute path for a .trashinfo Path key, keeping the slashes.
func trashInfoPath(abs string) string {
	return (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath()
}

// numberedName returns base for n == 1, else base with " n" before its extension: "m.gguf" → "m 2.gguf".
func numberedName(base string, n int) string {
	if n == 1 {
		return base
	}
	ext := filepath.Ext(base)
	return strings.TrimSuffix(base, ext) + " " + strconv.Itoa(n) + ext
}

// moveIntoDir moves path into dir under a name not taken yet and returns the new path. It is the
// whole of "trash" where the system keeps no records (macOS ~/.Trash).
func moveIntoDir(dir, path string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	base := filepath.Base(path)
	for n := 1; n < 10000; n++ {
		dst := filepath.Join(dir, numberedName(base, n))
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		if err := os.Rename(path, dst); err != nil {
			return "", err
		}
		return dst, nil
	}
	return "", fmt.Errorf("no free name in %s", dir)
}
