package ghreleases

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"hash/crc32"
	"io/fs"
	"path"
	"strings"
)

// Entry is one member of a hand-made archive: the hostile archives tests build, and the files of a
// Build (Entries) to put beside them.
type Entry struct {
	Name string      // as the archive names it (slash-separated, and it may be hostile: "../x", "/etc/x")
	Mode fs.FileMode // permission bits, with fs.ModeDir for a folder or fs.ModeSymlink for a symbolic link
	Data []byte      // a file's content, or a symbolic link's target
	// HardLink, when set, makes the entry a hard link to the archive's earlier entry of that name
	// (.tar.gz only; Data is ignored).
	HardLink string
	// Declared, when above 0, is the uncompressed size a .zip declares for the entry in place of
	// len(Data): an archive that lies about its size.
	Declared int64
	// Stored keeps the entry uncompressed in a .zip (Entries sets it for files over 1 MiB, as Zip
	// does: deflating a test binary is slow under the race detector).
	Stored bool
}

// Entries returns the build's files as archive entries under dir ("" for the archive's top,
// "llama-b7100/" for llama.cpp's .tar.gz layout).
func (b *Build) Entries(dir string) []Entry {
	out := make([]Entry, 0, len(b.files))
	for _, f := range b.files {
		out = append(out, Entry{Name: dir + f.name, Mode: f.mode, Data: f.data, Stored: len(f.data) > 1<<20})
	}
	return out
}

// Zip packs entries as a .zip, in order, with the names, modes and sizes given (symbolic links kept as
// links, as 7-Zip's -snl stores them). Hard links cannot be stored in a .zip and are left out.
func Zip(entries ...Entry) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		if e.HardLink != "" {
			continue
		}
		h := &zip.FileHeader{Name: e.Name, Method: zip.Deflate}
		h.SetMode(e.Mode)
		if e.Mode.IsDir() || e.Stored {
			h.Method = zip.Store
		}
		if e.Declared > 0 {
			if err := rawZipEntry(zw, h, e); err != nil {
				return nil, err
			}
			continue
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if !e.Mode.IsDir() {
			if _, err := w.Write(e.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// rawZipEntry writes e compressed by hand, so that the header can declare a size it does not have.
func rawZipEntry(zw *zip.Writer, h *zip.FileHeader, e Entry) error {
	var c bytes.Buffer
	fw, _ := flate.NewWriter(&c, flate.BestSpeed)
	fw.Write(e.Data)
	if err := fw.Close(); err != nil {
		return err
	}
	h.Method = zip.Deflate
	h.CRC32 = crc32.ChecksumIEEE(e.Data)
	h.CompressedSize64 = uint64(c.Len())
	h.UncompressedSize64 = uint64(e.Declared)
	w, err := zw.CreateRaw(h)
	if err != nil {
		return err
	}
	_, err = w.Write(c.Bytes())
	return err
}

// TarGz packs entries as a .tar.gz, in order (folders, files, symbolic and hard links as given).
func TarGz(entries ...Entry) ([]byte, error) {
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Mode: int64(e.Mode.Perm()), Size: int64(len(e.Data)), Typeflag: tar.TypeReg}
		switch {
		case e.HardLink != "":
			h = &tar.Header{Name: e.Name, Mode: 0o644, Typeflag: tar.TypeLink, Linkname: e.HardLink}
		case e.Mode&fs.ModeSymlink != 0:
			h = &tar.Header{Name: e.Name, Mode: 0o777, Typeflag: tar.TypeSymlink, Linkname: string(e.Data)}
		case e.Mode.IsDir():
			h = &tar.Header{Name: e.Name, Mode: int64(e.Mode.Perm()), Typeflag: tar.TypeDir}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// chainTop is the link chain's first link: a/b/c/up, whose target ../../.. is the archive's own
// folder, so that names through it look three levels deeper than they are.
var chainTop = Entry{Name: "a/b/c/up", Mode: fs.ModeSymlink | 0o777, Data: []byte("../../..")}

// LinkChain is the entries that write file outside the folder the archive is unpacked into, with
// links whose targets each stay inside when read from the name's own folder: a/b/c/up -> ../../..
// (the folder itself), a/b/c/up/esc -> escape (it lands in the folder as esc, so escape leaves it by
// up to four levels), then esc/<file> with data. escape is relative to that folder: "../../victim"
// reaches <the folder's grandparent>/victim.
func LinkChain(escape, file string, data []byte) []Entry {
	return []Entry{
		chainTop,
		{Name: "a/b/c/up/esc", Mode: fs.ModeSymlink | 0o777, Data: []byte(escape)},
		{Name: path.Join("esc", file), Mode: 0o644, Data: data},
	}
}

// HardLinkChain is LinkChain's escape used by a hard link (.tar.gz): h is made a hard link to
// esc/<file> (the file outside), then an entry h with data writes into it in place.
func HardLinkChain(escape, file string, data []byte) []Entry {
	return []Entry{
		chainTop,
		{Name: "a/b/c/up/esc", Mode: fs.ModeSymlink | 0o777, Data: []byte(escape)},
		{Name: "h", HardLink: path.Join("esc", file)},
		{Name: "h", Mode: 0o644, Data: data},
	}
}

// LinkOut is a link that leaves the folder only once resolved: x -> a/b/c/up/.. (levels times)
// reads as inside for up to four levels, but a/b/c/up is the folder itself, so x lands levels above
// it. LinkOut(4) writes nothing outside; whoever follows x later does.
func LinkOut(levels int) []Entry {
	return []Entry{chainTop, {Name: "x", Mode: fs.ModeSymlink | 0o777, Data: []byte("a/b/c/up" + strings.Repeat("/..", levels))}}
}

// HardLinkOut is LinkOut's x used by a hard link (.tar.gz): h is made a hard link to x/<file>,
// which is <file> levels above the folder, then an entry h with data writes into it in place.
func HardLinkOut(levels int, file string, data []byte) []Entry {
	return append(LinkOut(levels),
		Entry{Name: "h", HardLink: path.Join("x", file)},
		Entry{Name: "h", Mode: 0o644, Data: data})
}

// Bomb is one file of size zero bytes, which deflate packs hundreds of times smaller.
func Bomb(name string, size int64) Entry {
	return Entry{Name: name, Mode: 0o644, Data: make([]byte, size)}
}
