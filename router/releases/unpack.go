package releases

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/llamatray/llamatray/router/config"
)

// ErrUnsafe is matched when an archive entry would land outside the folder it is unpacked into, or
// write through a symbolic link.
var ErrUnsafe = errors.New("entry outside the archive's folder")

// unpack extracts the .zip or .tar.gz archive at file into dir (which exists), writing at most
// lim. Entries keep their folders and permission bits; symbolic links are kept when they lead inside
// dir; hard links (.tar.gz) when they link files unpacked before them. Nothing is written outside dir
// (see folder): entries that would are refused, as is an archive with a link that leads outside once
// it is unpacked. On an error dir holds what was unpacked so far; the caller removes it.
func unpack(file, name, dir string, lim limit) error {
	var unpackTo func(string, *folder) error
	switch archiveExt(name) {
	case ".zip":
		unpackTo = unzip
	case ".tar.gz", ".tgz":
		unpackTo = untgz
	default:
		return fmt.Errorf("%s: not a .zip or .tar.gz archive", name)
	}
	f, err := openFolder(dir, lim)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unpackTo(file, f); err != nil {
		return err
	}
	if err := f.copyLinks(); err != nil {
		return err
	}
	return f.links()
}

func untgz(file string, dir *folder) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(file), err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(file), err)
		}
		rel, err := entryName(h.Name)
		if err != nil {
			return err
		}
		if rel == "" {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = dir.mkdir(rel)
		case tar.TypeReg:
			err = dir.file(rel, tr, fs.FileMode(h.Mode))
		case tar.TypeSymlink:
			err = dir.symlink(rel, h.Linkname)
		case tar.TypeLink:
			err = dir.hardlink(rel, h.Linkname)
		}
		if err != nil {
			return err
		}
	}
}

func unzip(file string, dir *folder) error {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(file), err)
	}
	defer zr.Close()
	// The sizes the central directory declares, before anything is written; the bytes written are
	// counted as well, as declared sizes can lie.
	var declared uint64
	for _, zf := range zr.File {
		declared += min(zf.UncompressedSize64, math.MaxInt64/2) + entryCost
		if declared > uint64(dir.lim.max) {
			return dir.lim.exceeded(int64(min(declared, math.MaxInt64/2)))
		}
	}
	for _, zf := range zr.File {
		rel, err := entryName(zf.Name)
		if err != nil {
			return err
		}
		if rel == "" {
			continue
		}
		mode := zf.Mode()
		switch {
		case mode.IsDir() || strings.HasSuffix(zf.Name, "/"):
			err = dir.mkdir(rel)
		case mode&fs.ModeSymlink != 0:
			var link string
			if link, err = readZipEntry(zf); err == nil {
				err = dir.symlink(rel, link)
			}
		default:
			var rc io.ReadCloser
			if rc, err = zf.Open(); err != nil {
				return fmt.Errorf("%s: %w", zf.Name, err)
			}
			if mode.Perm() == 0 {
				mode = 0o644 // archives made on Windows carry no Unix permissions
			}
			err = dir.file(rel, rc, mode)
			rc.Close()
			if errors.Is(err, zip.ErrFormat) { // archive/zip reads no more than the entry declares
				err = fmt.Errorf("%s holds more than the %s the archive declares: %w", zf.Name, config.HumanSize(int64(min(zf.UncompressedSize64, math.MaxInt64))), err)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func readZipEntry(zf *zip.File) (string, error) {
	rc, err := zf.Open()
	if err != nil {
		return "", fmt.Errorf("%s: %w", zf.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 4096))
	if err != nil {
		return "", fmt.Errorf("%s: %w", zf.Name, err)
	}
	return string(b), nil
}

// findBinary returns the llama-server (llama-server.exe on Windows) in dir nearest to its top, as a
// path relative to dir: llama.cpp's archives put it at the top (Windows) or in a llama-<build> folder.
func findBinary(dir, name string) (string, error) {
	best, depth := "", -1
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != name {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if n := strings.Count(rel, string(filepath.Separator)); depth < 0 || n < depth {
			best, depth = rel, n
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if best == "" {
		return "", fmt.Errorf("the archive holds no %s", name)
	}
	return best, nil
}
