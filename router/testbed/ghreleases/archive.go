package ghreleases

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

// entry is one file of a release archive.
type entry struct {
	name string      // slash-separated path inside the archive
	mode fs.FileMode // permission bits, or fs.ModeSymlink
	data []byte      // the content, or the link's target
}

// Build is the set of files a llama.cpp release archive holds: llama-server and the libraries it
// loads from its own folder.
type Build struct {
	files []entry
}

// FromBinary wraps one llama-server executable (the test bed's fake) with a stand-in library and the
// license file beside it, as llama.cpp's archives hold libggml*.so and LICENSE beside llama-server.
func FromBinary(bin string) (*Build, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("ghreleases: %w", err)
	}
	return &Build{files: []entry{
		{name: binaryName(), mode: 0o755, data: data},
		{name: "libggml-base.so", mode: 0o644, data: []byte("stand-in library\n")},
		{name: "libggml.so.0", mode: fs.ModeSymlink, data: []byte("libggml-base.so")},
		{name: "LICENSE", mode: 0o644, data: []byte("MIT License\n")},
	}}, nil
}

// FromRelocatable wraps the real llama-server of the development cache: wrapper is a shell script
// (<cache>/bin/llama-server) that runs <cache>/root/usr/bin/llama-server with the libraries under
// <cache>/root. The archive holds that root folder (without usr/share) and a llama-server script
// beside it that runs the same binary from wherever the archive was unpacked.
func FromRelocatable(wrapper string) (*Build, error) {
	script, err := os.ReadFile(wrapper)
	if err != nil {
		return nil, fmt.Errorf("ghreleases: %w", err)
	}
	root := filepath.Join(filepath.Dir(filepath.Dir(wrapper)), "root")
	if !bytes.HasPrefix(script, []byte("#!")) || !bytes.Contains(script, []byte(root)) {
		return FromBinary(wrapper) // a plain executable
	}
	body := strings.ReplaceAll(string(script), root, "$here/root")
	shebang, rest, _ := strings.Cut(body, "\n")
	body = shebang + "\nhere=$(cd \"$(dirname \"$0\")\" && pwd)\n" + rest
	b := &Build{files: []entry{{name: "llama-server", mode: 0o755, data: []byte(body)}}}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "usr/share" || rel == "etc" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		name := path.Join("root", rel)
		if d.Type()&fs.ModeSymlink != 0 {
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			b.files = append(b.files, entry{name: name, mode: fs.ModeSymlink, data: []byte(link)})
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b.files = append(b.files, entry{name: name, mode: info.Mode().Perm(), data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ghreleases: packing %s: %w", root, err)
	}
	return b, nil
}

func binaryName() string {
	if runtime.GOOS == "windows" {
		return "llama-server.exe"
	}
	return "llama-server"
}

// key identifies the build's content, for the archive cache.
func (b *Build) key() string {
	h := sha256.New()
	for _, f := range b.files {
		fmt.Fprintf(h, "%s %o %d\n", f.name, f.mode, len(f.data))
		h.Write(f.data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// cached returns the archive named name of this build from a cache in the temporary folder (packing
// tens of MiB is slow under the race detector), packing it on a miss.
func (b *Build) cached(name string, pack func() ([]byte, error)) ([]byte, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("llamatray-ghreleases-%d", os.Getuid()))
	p := filepath.Join(dir, b.key()+"-"+name)
	if data, err := os.ReadFile(p); err == nil {
		return data, nil
	}
	data, err := pack()
	if err != nil {
		return nil, err
	}
	if os.MkdirAll(dir, 0o755) == nil {
		if f, err := os.CreateTemp(dir, ".pack-*"); err == nil {
			_, werr := f.Write(data)
			if f.Close() == nil && werr == nil {
				os.Rename(f.Name(), p) // atomic: parallel test binaries both succeed
			}
			os.Remove(f.Name())
		}
	}
	return data, nil
}

// TarGz packs the build the way llama.cpp's Linux and macOS releases do: every file under a
// llama-<tag>/ folder (`tar --transform "s,^\.,llama-<tag>,"` in its release workflow).
func (b *Build) TarGz(tag string) ([]byte, error) {
	return b.cached("llama-"+tag+".tar.gz", func() ([]byte, error) { return b.tarGz(tag) })
}

func (b *Build) tarGz(tag string) ([]byte, error) {
	dir := "llama-" + tag + "/"
	return TarGz(append([]Entry{{Name: dir, Mode: fs.ModeDir | 0o755}}, b.Entries(dir)...)...)
}

// Zip packs the build the way llama.cpp's Windows releases do (and its Linux ones did before
// .tar.gz): the files at the archive's top, symbolic links kept as links (`7z a -snl`).
func (b *Build) Zip() ([]byte, error) { return b.cached("flat.zip", b.zip) }

func (b *Build) zip() ([]byte, error) { return Zip(b.Entries("")...) }
