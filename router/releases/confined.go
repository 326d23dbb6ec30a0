package releases

import (
	"errors"
	"fmt"
	"github.com/llamatray/llamatray/router/download"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

// folder writes an archive's entries into one folder through an os.Root, so that no name, symbolic
// link or hard link reaches outside it whatever the archive holds:
//
//   - names are slash-separated paths inside the folder (entryName refuses the others);
//   - no entry is written through a symbolic link: one whose parent path passes through a link is
//     refused, and a file or link already at an entry's own name is removed first, never written
//     into (llama.cpp's archives never write through a linked folder);
//   - a symbolic link's target must stay inside read from the link's folder (which, its parents
//     being real folders, is where the link really is); once the archive is unpacked, links
//     checks where every link really leads, through the links it passes;
//   - a hard link's source must be a file unpacked before it, not through a link;
//   - the bytes written are counted against the limit (see limit).
type folder struct {
	root *os.Root
	dir  string          // the folder's path, for messages
	real map[string]bool // slash-separated folders checked or made to be real folders, not links
	lim  limit
	left int64 // what the archive may still write; below 0 once it wrote more than lim allows
	// copied are the symbolic links Windows would not make (no Developer Mode, or Wine): each becomes
	// a copy of the file it names once the archive is unpacked (copyLinks)
	copied []linkEntry
}

// linkEntry is a symbolic link of an archive: rel names target (slash-separated, from rel's folder).
type linkEntry struct{ rel, target string }

// entryName returns the archive entry name as a clean slash-separated path inside the folder ("" for
// the folder itself). Absolute names, names with a volume or a ".." element, and (on Windows) names
// Windows reserves are refused.
func entryName(name string) (string, error) {
	slashed := strings.ReplaceAll(name, `\`, "/")
	if absolute(slashed) {
		return "", fmt.Errorf("%q: %w", name, ErrUnsafe)
	}
	var parts []string
	for _, part := range strings.Split(slashed, "/") {
		switch part {
		case "..":
			return "", fmt.Errorf("%q: %w", name, ErrUnsafe)
		case "", ".":
		default:
			parts = append(parts, part)
		}
	}
	rel := strings.Join(parts, "/")
	if rel != "" && !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", fmt.Errorf("%q: %w", name, ErrUnsafe)
	}
	return rel, nil
}

// charge counts n more bytes written (or about to be), failing once the archive passes its limit.
func (f *folder) charge(n int64) error {
	f.left -= n
	if f.left < 0 {
		return f.lim.exceeded(-1)
	}
	return nil
}

// realDirs makes sure that every folder of the slash-separated path dir ("" or "." for the folder
// itself), the folder of the entry name, is a real folder, making the missing ones when mk is set. A
// symbolic link on the way is refused: nothing is ever written through one.
func (f *folder) realDirs(name, dir string, mk bool) error {
	if dir == "" || dir == "." {
		return nil
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		if f.real[p] {
			continue
		}
		fi, err := f.root.Lstat(filepath.FromSlash(p))
		if errors.Is(err, fs.ErrNotExist) && mk {
			if err = f.root.Mkdir(filepath.FromSlash(p), 0o755); err == nil {
				f.real[p] = true
				if err := f.charge(entryCost); err != nil {
					return err
				}
				continue
			}
			if !errors.Is(err, fs.ErrExist) {
				return download.DiskFull(err, filepath.Join(f.dir, filepath.FromSlash(p)))
			}
			fi, err = f.root.Lstat(filepath.FromSlash(p)) // it came meanwhile: check what it is
		}
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", name, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s: %s is a symbolic link, and nothing is unpacked through one: %w", name, p, ErrUnsafe)
		case !fi.IsDir():
			return fmt.Errorf("%s: %s is not a folder", name, p)
		}
		f.real[p] = true
	}
	return nil
}

// place readies the entry rel's own name: its folders real (made when missing), and a file or link
// left there by an earlier entry removed, so the new entry replaces it instead of writing into it.
func (f *folder) place(rel string) error {
	if err := f.realDirs(rel, path.Dir(rel), true); err != nil {
		return err
	}
	fi, err := f.root.Lstat(filepath.FromSlash(rel))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w", rel, err)
	case fi.IsDir():
		return fmt.Errorf("%s: a folder of the archive has that name", rel)
	}
	if err := f.root.Remove(filepath.FromSlash(rel)); err != nil {
		return fmt.Errorf("replacing %s: %w", rel, err)
	}
	return nil
}

// mkdir makes the folder rel and those above it.
func (f *folder) mkdir(rel string) error { return f.realDirs(rel, rel, true) }

// file writes the file rel with r's content.
func (f *folder) file(rel string, r io.Reader, mode fs.FileMode) error {
	if err := f.charge(entryCost); err != nil {
		return err
	}
	if err := f.place(rel); err != nil {
		return err
	}
	out, err := f.root.OpenFile(filepath.FromSlash(rel), os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode.Perm()|0o600)
	p := filepath.Join(f.dir, filepath.FromSlash(rel))
	if err != nil {
		return download.DiskFull(err, p)
	}
	// One byte more than the limit allows tells that the entry is larger than it may be.
	n, err := io.Copy(out, io.LimitReader(r, max(f.left, 0)+1))
	if err != nil {
		out.Close()
		if download.IsDiskFull(err) {
			return download.DiskFull(err, p)
		}
		return fmt.Errorf("unpacking %s: %w", p, err)
	}
	if err := f.charge(n); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return download.DiskFull(err, p)
	}
	return nil
}

// symlink makes rel a symbolic link to link (slash- or backslash-separated), which must stay inside
// the folder read from rel's own folder.
func (f *folder) symlink(rel, link string) error {
	if err := f.charge(entryCost + int64(len(link))); err != nil {
		return err
	}
	t := strings.ReplaceAll(link, `\`, "/")
	if !linkOK(rel, t) {
		return fmt.Errorf("link %s -> %s: %w", rel, link, ErrUnsafe)
	}
	if err := f.place(rel); err != nil {
		return err
	}
	if err := f.root.Symlink(filepath.FromSlash(t), filepath.FromSlash(rel)); err != nil {
		if runtime.GOOS == "windows" {
			f.copied = append(f.copied, linkEntry{rel, t})
			return nil
		}
		return download.DiskFull(err, filepath.Join(f.dir, filepath.FromSlash(rel)))
	}
	return nil
}

// copyLinks makes each link Windows would not make a hard link to, or else a copy of, the file it
// names, once every file is unpacked; a link to another such link waits for that one. A link to a
// folder, or to nothing, is left out: the unpacked tree has no entry there. The name each link gives
// was checked to stay inside (linkOK), and everything goes through the folder's os.Root.
func (f *folder) copyLinks() error {
	todo := f.copied
	for len(todo) > 0 {
		var later []linkEntry
		for _, l := range todo {
			from := path.Join(path.Dir(l.rel), l.target)
			fi, err := f.root.Stat(filepath.FromSlash(from))
			switch {
			case err != nil:
				later = append(later, l)
				continue
			case !fi.Mode().IsRegular():
				continue
			}
			if err := f.charge(fi.Size()); err != nil {
				return err
			}
			if err := f.root.Link(filepath.FromSlash(from), filepath.FromSlash(l.rel)); err != nil {
				if err := f.copyFile(from, l.rel, fi.Mode()); err != nil {
					return err
				}
			}
		}
		if len(later) == len(todo) {
			break // what is left names nothing
		}
		todo = later
	}
	return nil
}

// copyFile copies the file from to rel, both inside the folder.
func (f *folder) copyFile(from, rel string, mode fs.FileMode) error {
	in, err := f.root.Open(filepath.FromSlash(from))
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := f.root.OpenFile(filepath.FromSlash(rel), os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode.Perm()|0o600)
	if err != nil {
		return download.DiskFull(err, filepath.Join(f.dir, filepath.FromSlash(rel)))
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return download.DiskFull(err, filepath.Join(f.dir, filepath.FromSlash(rel)))
	}
	return out.Close()
}

// linkOK reports whether a symbolic link at rel with the slash-separated target link stays inside the
// folder, read lexically from rel's folder.
func linkOK(rel, link string) bool {
	if link == "" || absolute(link) {
		return false
	}
	to := path.Join(path.Dir(rel), link)
	return to != ".." && !strings.HasPrefix(to, "../")
}

// absolute reports whether the slash-separated name p is not relative: it starts with "/", a volume
// name, or has a ":" in its first element (a drive, or an NTFS stream).
func absolute(p string) bool {
	return strings.HasPrefix(p, "/") || filepath.VolumeName(filepath.FromSlash(p)) != "" || strings.Contains(strings.SplitN(p, "/", 2)[0], ":")
}

// hardlink makes rel a hard link to src, an archive name of a file unpacked before it.
func (f *folder) hardlink(rel, src string) error {
	if err := f.charge(entryCost); err != nil {
		return err
	}
	from, err := entryName(src)
	if err != nil || from == "" || from == rel {
		return fmt.Errorf("hard link %s -> %s: %w", rel, src, ErrUnsafe)
	}
	if err := f.realDirs(from, path.Dir(from), false); err != nil {
		return fmt.Errorf("hard link %s -> %s: %w", rel, src, err)
	}
	if fi, err := f.root.Lstat(filepath.FromSlash(from)); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("hard link %s -> %s: the source is not a file unpacked before it: %w", rel, src, ErrUnsafe)
	}
	if err := f.place(rel); err != nil {
		return err
	}
	if err := f.root.Link(filepath.FromSlash(from), filepath.FromSlash(rel)); err != nil {
		return download.DiskFull(err, filepath.Join(f.dir, filepath.FromSlash(rel)))
	}
	return nil
}

// maxHops is how many symbolic links a resolution follows before it is taken for a loop (Linux's
// MAXSYMLINKS).
const maxHops = 40

// links checks, once the archive is unpacked, that every symbolic link in the folder really leads
// inside it: each is resolved through the links it passes (a chain such as x -> a/b/c/up/../../../..
// with a/b/c/up -> ../../.. reads as inside and is not). A link whose target is missing is kept
// when where it would lead (the links on its way followed, the missing part taken as named) is
// inside: it cannot reach outside, and llama.cpp's archives have none; a loop is refused.
func (f *folder) links() error {
	return fs.WalkDir(f.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("checking %s: %w", f.dir, err)
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if err := f.resolve(p); err != nil {
			link, _ := f.root.Readlink(filepath.FromSlash(p))
			return fmt.Errorf("link %s -> %s: %w", p, filepath.ToSlash(link), err)
		}
		return nil
	})
}

// resolve follows the slash-separated name rel through the folder's symbolic links, failing with
// ErrUnsafe when the way leaves the folder.
func (f *folder) resolve(rel string) error {
	todo := strings.Split(rel, "/")
	var at []string // the real folders (or missing names) reached so far, from the folder's top
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(at) == 0 {
				return fmt.Errorf("it leads outside the folder: %w", ErrUnsafe)
			}
			at = at[:len(at)-1]
			continue
		}
		p := strings.Join(append(at, c), "/")
		fi, err := f.root.Lstat(filepath.FromSlash(p))
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			at = append(at, c) // a file, a folder, or missing: taken as named
			continue
		}
		if hops++; hops > maxHops {
			return fmt.Errorf("too many levels of symbolic links: %w", ErrUnsafe)
		}
		link, err := f.root.Readlink(filepath.FromSlash(p))
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		link = filepath.ToSlash(link)
		if absolute(link) {
			return fmt.Errorf("%s is absolute: %w", p, ErrUnsafe)
		}
		todo = append(strings.Split(link, "/"), todo...)
	}
	return nil
}

// chmodInside changes the mode of rel (relative to dir) without leaving dir, even through a link.
func chmodInside(dir, rel string, mode fs.FileMode) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.Chmod(rel, mode)
}
