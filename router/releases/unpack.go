package releases

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// errUnsafe is matched when an archive entry would land outside the folder it is unpacked into.
var errUnsafe = errors.New("entry outside the archive's folder")

// unpack extracts the .zip or .tar.gz archive at file into dir (which exists). Entries keep their
// folders and permission bits; symbolic links are kept when they point inside dir; entries that
// would leave dir are refused.
func unpack(file, name, dir string) error {
	switch archiveExt(name) {
	case ".zip":
		return unzip(file, dir)
	case ".tar.gz", ".tgz":
		return untgz(file, dir)
	}
	return fmt.Errorf("%s: not a .zip or .tar.gz archive", name)
}

// target returns where the archive entry name goes under dir ("" for the archive's root). Absolute
// names and names with a ".." element are refused.
func target(dir, name string) (string, error) {
	slashed := strings.ReplaceAll(name, `\`, "/")
	if strings.HasPrefix(slashed, "/") || filepath.VolumeName(name) != "" || strings.Contains(strings.SplitN(slashed, "/", 2)[0], ":") {
		return "", fmt.Errorf("%q: %w", name, errUnsafe)
	}
	var parts []string
	for _, part := range strings.Split(slashed, "/") {
		switch part {
		case "..":
			return "", fmt.Errorf("%q: %w", name, errUnsafe)
		case "", ".":
		default:
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 {
		return "", nil
	}
	return filepath.Join(append([]string{dir}, parts...)...), nil
}

// linkOK reports whether a symbolic link at p (under dir) with the given target stays inside dir.
func linkOK(dir, p, link string) bool {
	if link == "" || filepath.IsAbs(link) || strings.HasPrefix(link, "/") {
		return false
	}
	resolved := filepath.Join(filepath.Dir(p), filepath.FromSlash(link))
	rel, err := filepath.Rel(dir, resolved)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func writeFile(p string, r io.Reader, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return diskFull(err, filepath.Dir(p))
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode.Perm()|0o600)
	if err != nil {
		return diskFull(err, p)
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		if isDiskFull(err) {
			return diskFull(err, p)
		}
		return fmt.Errorf("unpacking %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return diskFull(err, p)
	}
	return nil
}

func symlink(dir, p, link string) error {
	if !linkOK(dir, p, link) {
		return fmt.Errorf("link %s -> %s: %w", p, link, errUnsafe)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return diskFull(err, filepath.Dir(p))
	}
	if err := os.Symlink(filepath.FromSlash(link), p); err != nil {
		return diskFull(err, p)
	}
	return nil
}

func untgz(file, dir string) error {
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
		p, err := target(dir, h.Name)
		if err != nil || p == "" {
			if err != nil {
				return err
			}
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return diskFull(err, p)
			}
		case tar.TypeReg:
			if err := writeFile(p, tr, fs.FileMode(h.Mode)); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := symlink(dir, p, h.Linkname); err != nil {
				return err
			}
		case tar.TypeLink:
			src, err := target(dir, h.Linkname)
			if err != nil || src == "" {
				return fmt.Errorf("hard link %s -> %s: %w", h.Name, h.Linkname, errUnsafe)
			}
			if err := os.Link(src, p); err != nil {
				return diskFull(err, p)
			}
		}
	}
}

func unzip(file, dir string) error {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(file), err)
	}
	defer zr.Close()
	for _, zf := range zr.File {
		p, err := target(dir, zf.Name)
		if err != nil {
			return err
		}
		if p == "" {
			continue
		}
		mode := zf.Mode()
		switch {
		case mode.IsDir() || strings.HasSuffix(zf.Name, "/"):
			if err := os.MkdirAll(p, 0o755); err != nil {
				return diskFull(err, p)
			}
		case mode&fs.ModeSymlink != 0:
			link, err := readZipEntry(zf)
			if err != nil {
				return err
			}
			if err := symlink(dir, p, link); err != nil {
				return err
			}
		default:
			rc, err := zf.Open()
			if err != nil {
				return fmt.Errorf("%s: %w", zf.Name, err)
			}
			if mode.Perm() == 0 {
				mode = 0o644 // archives made on Windows carry no Unix permissions
			}
			err = writeFile(p, rc, mode)
			rc.Close()
			if err != nil {
				return err
			}
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
