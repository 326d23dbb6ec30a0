package releases

import (
	"archive/tar"
	"archive/zip"
	"cmp"
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
	"github.com/llamatray/llamatray/router/download"
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
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("unpacking into %s: %w", dir, err)
	}
	defer root.Close()
	f := &folder{root: root, dir: dir, real: map[string]bool{}, lim: lim, left: lim.max}
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

// ErrTooLarge is matched when an answer of the API is larger than Client.MaxBody, a download is larger
// than its release lists, or an archive unpacks to more than an install accepts (Installer.MaxUnpacked).
var ErrTooLarge = download.ErrTooLarge

// The limits of one install, the defaults of the Installer's fields.
const (
	// DefaultMaxUnpacked is the most one archive may unpack to, whatever the free space.
	DefaultMaxUnpacked = 8 << 30
	// DefaultUnpackRatio is how many times its own size an archive may unpack to, at least 64 MiB
	// (llama.cpp's unpack to about twice theirs; deflate packs a run of zeros about 1000 times).
	DefaultUnpackRatio = 200
)

const (
	// unpackFloor is the least the ratio allows: an archive of a few KiB may unpack to 64 MiB.
	unpackFloor = 64 << 20
	// diskMargin is the free space an unpack leaves on the store's file system.
	diskMargin = 256 << 20
	// entryCost is what each entry of an archive counts besides its bytes, about the least a file
	// takes on disk (a block): an archive of a million empty files, which would use up the disk's
	// inodes, counts as 4 GiB.
	entryCost = 4 << 10
)

// limit is the most one archive may unpack to, and what sets it.
type limit struct {
	max  int64
	disk bool   // the free disk space sets it: passing it is ErrDiskFull, not ErrTooLarge
	why  string // what sets it, for the error
}

// exceeded is the error of an archive that unpacks to size bytes (-1: more than the limit, found
// while unpacking), more than l allows.
func (l limit) exceeded(size int64) error {
	what := "more than " + config.HumanSize(l.max)
	if size >= 0 {
		what = config.HumanSize(size) + ", " + what
	}
	if l.disk {
		return fmt.Errorf("%w: the archive unpacks to %s (%s)", ErrDiskFull, what, l.why)
	}
	return fmt.Errorf("the archive is %w: it unpacks to %s (%s)", ErrTooLarge, what, l.why)
}

// unpackLimit is how much an archive of size bytes may unpack to: the least of the hard maximum,
// the ratio bound, and the store's free space less a margin.
func (in *Installer) unpackLimit(size int64) limit {
	l := limit{max: cmp.Or(max(in.MaxUnpacked, 0), DefaultMaxUnpacked), why: "the most an archive may unpack to"}
	ratio := cmp.Or(max(in.UnpackRatio, 0), DefaultUnpackRatio)
	if r := max(mulSat(size, ratio), unpackFloor); r < l.max {
		l = limit{max: r, why: fmt.Sprintf("%d times the archive's %s, at least %s", ratio, config.HumanSize(size), config.HumanSize(unpackFloor))}
	}
	if free, ok := in.freeSpace(); ok && free-diskMargin < l.max {
		l = limit{max: max(free-diskMargin, 0), disk: true,
			why: fmt.Sprintf("%s free in %s, less %s kept free", config.HumanSize(free), in.Store.Root, config.HumanSize(diskMargin))}
	}
	return l
}

// freeSpace is the free space of the store's file system, false when unknown.
func (in *Installer) freeSpace() (int64, bool) {
	if in.diskFree != nil {
		return in.diskFree(in.Store.Root)
	}
	return download.Free(in.Store.Root)
}

// mulSat is a×b for non-negative a and b, math.MaxInt64 when that overflows.
func mulSat(a, b int64) int64 {
	if a > 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}
